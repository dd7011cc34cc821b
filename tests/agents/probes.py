"""Probe scenarios: what each real agent CLI sends its tool hooks, and what it does with each answer.

  python3 harness.py probe list                 the scenarios, per CLI
  python3 harness.py probe CLI SCENARIO...      run some (CLI: claude|codex|gemini|opencode)
  python3 harness.py probe CLI all              every scenario that CLI has
  python3 harness.py probe all                  every CLI, every scenario (about 15 minutes)
  python3 harness.py capture-streams            the stream-json corpus (tests/corpus/agent-streams)
  python3 harness.py probe freeze               the runs' outcomes become the verified ones
                                                (probe_expect.json); a later run that differs
                                                says what changed ("ok": false)

Each scenario scripts the model (model_server.py) to call one or more tools, wires
probe_hook.py (OpenCode: probe_plugin.js) to the CLI's pre-tool, post-tool and stop events with
the answers the scenario names, and records the facts: which hook events came with which input,
which files the tools wrote, which of the model's later requests carry the marker strings the
answers used (so "the model was told" is checked on the wire, not assumed), and the token usage
the CLI recorded against what the server reported. PROTOCOLS.md is written from these facts.
probe_expect.json holds each scenario's outcome as verified with the pinned versions; a run
that differs says what changed ("differs_from_verified", "ok": false): protocol drift.

Run dir: $AGENTS_RUNS/probe-CLI-SCENARIO/ as harness.py's, plus probe-config.json, probe.jsonl
(every hook call: event, input, the answer given) and facts.json.
Not part of `harness.py all` (CI): each scenario is a full CLI run.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import harness as H

PROBE_HOOK = os.path.join(H.HERE, "probe_hook.py")
PROBE_PLUGIN = os.path.join(H.HERE, "probe_plugin.js")
CORPUS = os.path.join(H.ROOT, "tests", "corpus", "agent-streams")
REASON = "PROBE-REASON-Q7"      # a pre-tool refusal's reason
POSTMSG = "PROBE-POST-K4"       # a post-tool hook's message
STOPMSG = "PROBE-STOP-Z9"       # a stopReason / systemMessage
STDERR = "PROBE-STDERR-X2"      # what a failing hook writes on stderr
SHELL_ERR = "probe-missing-W5"  # named by the failing shell command; its error names it too
START_MSG = "PROBE-START-S1"    # a session-start hook's context
PROMPT_MSG = "PROBE-PROMPT-P2"  # a prompt hook's context
MARKERS = (REASON, POSTMSG, STOPMSG, STDERR, SHELL_ERR, "probe_hook.py", START_MSG, PROMPT_MSG)
PRE = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool", "opencode": "tool.execute.before"}
POST = {"claude": "PostToolUse", "codex": "PostToolUse", "gemini": "AfterTool", "opencode": "tool.execute.after"}
STOP = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent"}
# The session's start and the user's prompt, before the model is asked anything.
SESSION = {"claude": ("SessionStart", "UserPromptSubmit"), "codex": ("SessionStart", "UserPromptSubmit"),
           "gemini": ("SessionStart", "BeforeAgent")}
FINAL = "Wrote it.\nSTATUS: OK"
PATCH_ADD = "*** Begin Patch\n*** Add File: probe.txt\n+probe\n*** End Patch\n"
PATCH_EDIT = "*** Begin Patch\n*** Update File: seed.txt\n@@\n-old line\n+new line\n*** End Patch\n"
HEREDOC = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: heredoc.txt\n+heredoc\n*** End Patch\nEOF\n"
SHELL_OK = "echo shell-ok > shell.txt"
SHELL_TWO = "echo two > two.txt"  # the call after the one a hook answered: did the agent go on?
SHELL_FAIL = "ls %s" % SHELL_ERR


# ------------------------------------------------------------------ the model's tool calls

def calls(cli, proj):
    """The scripted tool calls, by purpose, in each CLI's own tool names and input shapes."""
    probe, seed = proj + "/probe.txt", proj + "/seed.txt"
    if cli == "claude":
        return {
            "write": {"name": "Write", "input": {"file_path": probe, "content": "probe\n"}},
            "read_seed": {"name": "Read", "input": {"file_path": seed}},
            "edit": {"name": "Edit", "input": {"file_path": seed, "old_string": "old line", "new_string": "new line"}},
            "shell": {"name": "Bash", "input": {"command": SHELL_OK, "description": "probe shell"}},
            "shell2": {"name": "Bash", "input": {"command": SHELL_TWO, "description": "probe shell two"}},
            "shell_fail": {"name": "Bash", "input": {"command": SHELL_FAIL, "description": "probe failing shell"}},
            "subagent": {"name": "Agent", "input": {"description": "Write the probe", "prompt": "Write the file.",
                                                    "subagent_type": "general-purpose", "run_in_background": False}},
        }
    if cli == "codex":
        return {
            "write": {"name": "apply_patch", "input": PATCH_ADD},
            "edit": {"name": "apply_patch", "input": PATCH_EDIT},
            "shell": {"name": "exec_command", "input": {"cmd": SHELL_OK}},
            "shell2": {"name": "exec_command", "input": {"cmd": SHELL_TWO}},
            "touch": {"name": "exec_command", "input": {"cmd": "touch shell.txt"}},
            "shell_fail": {"name": "exec_command", "input": {"cmd": SHELL_FAIL}},
            "heredoc": {"name": "exec_command", "input": {"cmd": HEREDOC}},
            "write_fn": {"name": "apply_patch", "kind": "function", "input": {"input": PATCH_ADD}},
        }
    if cli == "gemini":
        return {
            "write": {"name": "write_file", "input": {"file_path": probe, "content": "probe\n"}},
            "edit": {"name": "replace", "input": {"file_path": seed, "old_string": "old line", "new_string": "new line",
                                                  "instruction": "probe edit"}},
            "shell": {"name": "run_shell_command", "input": {"command": SHELL_OK, "description": "probe shell"}},
            "shell2": {"name": "run_shell_command", "input": {"command": SHELL_TWO, "description": "probe shell two"}},
            "shell_fail": {"name": "run_shell_command", "input": {"command": SHELL_FAIL,
                                                                  "description": "probe failing shell"}},
        }
    return {  # opencode
        "write": {"name": "write", "input": {"filePath": probe, "content": "probe\n"}},
        "read_seed": {"name": "read", "input": {"filePath": seed}},
        "edit": {"name": "edit", "input": {"filePath": seed, "oldString": "old line", "newString": "new line"}},
        "shell": {"name": "bash", "input": {"command": SHELL_OK, "description": "probe shell"}},
        "shell2": {"name": "bash", "input": {"command": SHELL_TWO, "description": "probe shell two"}},
        "shell_fail": {"name": "bash", "input": {"command": SHELL_FAIL, "description": "probe failing shell"}},
    }


# ------------------------------------------------------------------ scenarios

def hso(cli, decision, reason=REASON):
    out = {"hookEventName": PRE[cli], "permissionDecision": decision}
    if reason is not None:
        out["permissionDecisionReason"] = reason
    return {"hookSpecificOutput": out}


def pre_answers(cli, answer):
    """A pre-tool answer given only to the call that names probe.txt (the write)."""
    return {PRE[cli]: [dict(answer, when="probe.txt")]}


def deny_variants(cli):
    """The refusals to try on a file write, each a scenario: which refuses, which tells the model."""
    v = {
        "deny_hso": {"stdout": hso(cli, "deny")},
        "deny_hso_noreason": {"stdout": hso(cli, "deny", None)},
        "deny_top": {"stdout": {"decision": "deny", "reason": REASON}},
        "block_top": {"stdout": {"decision": "block", "reason": REASON}},
        "ask_hso": {"stdout": hso(cli, "ask")},
        "ask_top": {"stdout": {"decision": "ask", "reason": REASON}},
        "allow_hso": {"stdout": hso(cli, "allow")},
        "continue_false": {"stdout": {"continue": False, "stopReason": STOPMSG, "systemMessage": STOPMSG}},
        "deny_and_stop": {"stdout": dict({"decision": "deny", "reason": REASON} if cli == "gemini" else hso(cli, "deny"),
                                         stopReason=STOPMSG, **{"continue": False})},
        "noop_json": {"stdout": {}},
        "exit2": {"stderr": STDERR, "exit": 2},
        "exit1": {"stderr": STDERR, "exit": 1},
        "invalid_json": {"stdout": "not json " + STDERR},
        "timeout": {"sleep": 20, "stdout": hso(cli, "deny"), "hook_timeout": 3},
    }
    if cli == "gemini":
        v["deny_top_noreason"] = {"stdout": {"decision": "deny"}}
    if cli == "claude":  # its fourth permissionDecision
        v["defer_hso"] = {"stdout": hso(cli, "defer")}
    if cli == "opencode":
        v = {"throw": {"stdout": {"throw": REASON}},
             "abort_throw": {"stdout": {"throw": REASON, "abort": True}}}
    return v


def post_variants(cli):
    """What a post-tool hook answers after a shell command that succeeded."""
    if cli == "opencode":
        return {"post_replace": {"stdout": {"output": POSTMSG}},
                "post_append": {"stdout": {"append": "\n" + POSTMSG}},
                "post_throw": {"stdout": {"throw": POSTMSG}}}
    return {
        "post_block": {"stdout": {"decision": "block", "reason": POSTMSG}},
        "post_deny": {"stdout": {"decision": "deny", "reason": POSTMSG}},
        "post_context": {"stdout": {"hookSpecificOutput": {"hookEventName": POST[cli], "additionalContext": POSTMSG}}},
        "post_system": {"stdout": {"systemMessage": POSTMSG}},
        "post_exit2": {"stderr": POSTMSG, "exit": 2},
        "post_stop": {"stdout": {"continue": False, "stopReason": STOPMSG}},
    }


def scenarios(cli):
    """name -> spec: "turns" (call names from calls(), texts, or {"text", "calls"} for one
    message with several calls), "answers" (the probe's config), "stop": "validator" (else the
    probe answers the stop event too), and CLI settings ("mode", "deny_rule", "model", "serve")."""
    out = {}
    seq = {"codex": ["write", "edit", "shell", "shell_fail", "heredoc"],
           "gemini": ["write", "edit", "shell", "shell_fail"]}.get(cli, ["write", "read_seed", "edit", "shell", "shell_fail"])
    out["observe"] = {"turns": seq + [FINAL]}
    # One model message with text and two calls: how the CLI records (and counts) it, the hooks' order.
    out["parallel"] = {"turns": [{"text": "Two at once.", "calls": ["write", "shell"]}, FINAL]}
    # After the answered call, a second one (shell2: two.txt): whether the agent went on.
    for name, answer in deny_variants(cli).items():
        out[name] = {"turns": ["write", "shell2", FINAL], "answers": pre_answers(cli, answer)}
    for name, answer in post_variants(cli).items():
        ans = {POST[cli]: [dict(answer, when="shell.txt")]}
        out[name] = {"turns": ["shell", "shell2", FINAL], "answers": ans}
    out.update(EXTRA[cli](cli))
    if cli in STOP:  # the stop event answered by the probe: does a block or a failure show its command line?
        stop_variants = {"stop_block": {"stdout": {"decision": "deny" if cli == "gemini" else "block", "reason": REASON}},
                         "stop_exit2": {"stderr": STDERR, "exit": 2},
                         "stop_exit1": {"stderr": STDERR, "exit": 1}}
        for name, answer in stop_variants.items():
            out[name] = {"turns": ["I am done.\nSTATUS: OK", FINAL], "answers": {STOP[cli]: [dict(answer, nth=[1])]}}
    if cli in SESSION:  # context at the session's start and at the prompt; a prompt refused
        start, prompt = SESSION[cli]
        ctx = lambda event, m: {"stdout": {"hookSpecificOutput": {"hookEventName": event, "additionalContext": m}}}  # noqa: E731
        out["session_context"] = {"turns": ["answer", FINAL], "session": True,
                                  "answers": {start: [ctx(start, START_MSG)], prompt: [ctx(prompt, PROMPT_MSG)]}}
        out["prompt_block"] = {"turns": [FINAL], "session": True,
                               "answers": {prompt: [{"stdout": {"decision": "block", "reason": REASON}}]}}
        out["prompt_exit2"] = {"turns": [FINAL], "session": True,
                               "answers": {prompt: [{"stderr": STDERR, "exit": 2}]}}
    out["stream_pass"] = {"turns": ["answer", FINAL], "stop": "validator"}
    # OpenCode judges through the validator plugin, under `opencode serve`.
    out["stream_fail"] = {"turns": ["I am done.\nSTATUS: OK", "answer", FINAL], "stop": "validator",
                          "serve": cli == "opencode"}
    return out


def claude_extra(cli):
    allow = pre_answers(cli, {"stdout": hso(cli, "allow")})
    return {
        # A failure goes to PostToolUseFailure, not PostToolUse.
        "postfail_context": {"turns": ["shell_fail", FINAL], "answers": {"PostToolUseFailure": [
            {"stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": POSTMSG}}}]}},
        "postfail_block": {"turns": ["shell_fail", FINAL], "answers": {"PostToolUseFailure": [
            {"stdout": {"decision": "block", "reason": POSTMSG}}]}},
        "subagent": {"turns": ["subagent", "write", "Sub done.\nSTATUS: OK", FINAL]},
        "subagent_deny": {"turns": ["subagent", "write", "Sub done.\nSTATUS: OK", FINAL],
                          "answers": pre_answers(cli, {"stdout": hso(cli, "deny")})},
        # Is a hook's silence "no opinion"? Permission mode default: a Write needs a person's
        # approval, which -p cannot ask for. And a deny rule of the user's own.
        "perm_default_empty": {"turns": ["write", FINAL], "mode": "default"},
        "perm_default_allow": {"turns": ["write", FINAL], "mode": "default", "answers": allow},
        "perm_rule_empty": {"turns": ["write", FINAL], "deny_rule": True},
        "perm_rule_allow": {"turns": ["write", FINAL], "deny_rule": True, "answers": allow},
    }


def codex_extra(cli):
    out = {"heredoc_observe": {"turns": ["heredoc", FINAL]},
           "heredoc_deny": {"turns": ["heredoc", FINAL],
                            "answers": {PRE[cli]: [{"stdout": hso(cli, "deny"), "when": "heredoc.txt"}]}},
           "write_fn": {"turns": ["write_fn", FINAL]}}
    for model in ("gpt-4.1", "o3", "gpt-5-codex"):  # which shell and patch tools each model is offered
        out["tools_" + model] = {"turns": [FINAL], "model": model}
    # The user's own rules: an execpolicy rule that forbids `touch`.
    out["perm_rule_empty"] = {"turns": ["touch", FINAL], "deny_rule": True}
    out["perm_rule_allow"] = {"turns": ["touch", FINAL], "deny_rule": True,
                              "answers": {PRE[cli]: [{"stdout": hso(cli, "allow"), "when": "shell.txt"}]}}
    return out


def gemini_extra(cli):
    allow = {"stdout": {"decision": "allow"}}
    return {  # the user's policy: no `echo`; approval mode default: no write_file headless
        "perm_rule_empty": {"turns": ["shell", FINAL], "deny_rule": True},
        "perm_rule_allow": {"turns": ["shell", FINAL], "deny_rule": True,
                            "answers": {PRE[cli]: [dict(allow, when="shell.txt")]}},
        "perm_default_empty": {"turns": ["write", FINAL], "mode": "default"},
        "perm_default_allow": {"turns": ["write", FINAL], "mode": "default", "answers": pre_answers(cli, allow)},
    }


def opencode_extra(cli):
    return {"perm_rule_empty": {"turns": ["shell", FINAL], "deny_rule": True},
            "args_rewrite": {"turns": ["shell", FINAL], "answers": {PRE[cli]: [
                {"when": "shell.txt", "stdout": {"args": {"command": "echo rewritten > rewritten.txt"}}}]}}}


EXTRA = {"claude": claude_extra, "codex": codex_extra, "gemini": gemini_extra, "opencode": opencode_extra}


def script(cli, proj, spec):
    table = calls(cli, proj)
    turns = []
    for t in spec["turns"]:
        if isinstance(t, dict):  # {"text": ..., "calls": [names]}: one message, several calls
            turns.append({"text": t["text"], "tools": [table[n] for n in t["calls"]]})
        elif t == "answer":
            turns.append({"write": {"path": proj + "/answer.txt", "rel": "answer.txt", "content": "42\n"}})
        elif t in table:
            turns.append({"tool": table[t]})
        else:
            turns.append({"text": t})
    return {"turns": turns, "after_last": "text"}


# ------------------------------------------------------------------ wiring the probe into each CLI

def probe_command(cfg, event):
    return "python3 %s --config %s %s" % (PROBE_HOOK, cfg, event)


def wire(cli, run, proj, rules, spec, cmd, env, cfg):
    timeout = spec.get("hook_timeout", 60)
    stop_cmd = H.hook_command(cli, rules) if spec.get("stop") == "validator" else None

    def group(event, seconds=60, matcher=None):
        hook = {"type": "command", "command": probe_command(cfg, event), "timeout": seconds}
        if cli == "gemini":
            hook = dict(hook, name="probe-" + event, timeout=seconds * 1000)
        g = {"hooks": [hook]}
        if matcher:
            g["matcher"] = matcher
        return [g]

    def stop_group(event):
        if stop_cmd:
            hook = {"type": "command", "command": stop_cmd, "timeout": 600}
            if cli == "gemini":
                hook = dict(hook, name="validator", timeout=600000)
            return [{"hooks": [hook]}]
        return group(event)

    session = {e: group(e) for e in SESSION[cli]} if spec.get("session") else {}
    if cli == "claude":
        hooks = {"PreToolUse": group("PreToolUse", timeout, "*"), "PostToolUse": group("PostToolUse", 60, "*"),
                 "PostToolUseFailure": group("PostToolUseFailure", 60, "*"),
                 "Stop": stop_group("Stop"), "SubagentStop": stop_group("SubagentStop"), **session}
        settings = {"hooks": hooks}
        if spec.get("deny_rule"):
            # A rule on one path (a bare "Write" takes the tool away from the model altogether).
            settings["permissions"] = {"deny": ["Edit(./probe.txt)", "Write(./probe.txt)", "Edit(//%s)" % (proj.lstrip("/") + "/probe.txt")]}
        with open(proj + "/.claude/settings.json", "w") as f:
            json.dump(settings, f, indent=2)
        if spec.get("mode"):
            cmd[cmd.index("--permission-mode") + 1] = spec["mode"]
    elif cli == "codex":
        hooks = {"PreToolUse": group("PreToolUse", timeout), "PostToolUse": group("PostToolUse"),
                 "Stop": stop_group("Stop"), "SubagentStop": stop_group("SubagentStop"), **session}
        with open(proj + "/.codex/hooks.json", "w") as f:
            json.dump({"hooks": hooks}, f, indent=2)
        if spec.get("model"):  # the tools Codex offers depend on the model it believes it talks to
            path = env["CODEX_HOME"] + "/config.toml"
            text = open(path).read().replace('model = "gpt-5.5"', 'model = "%s"' % spec["model"], 1)
            with open(path, "w") as f:
                f.write(text)
        if spec.get("deny_rule"):
            os.makedirs(env["CODEX_HOME"] + "/rules", exist_ok=True)
            with open(env["CODEX_HOME"] + "/rules/default.rules", "w") as f:
                f.write('prefix_rule(pattern = ["touch"], decision = "forbidden")\n')
    elif cli == "gemini":
        hooks = {"BeforeTool": group("BeforeTool", timeout), "AfterTool": group("AfterTool"),
                 "AfterAgent": stop_group("AfterAgent"), **session}
        with open(proj + "/.gemini/settings.json", "w") as f:
            json.dump({"hooks": hooks}, f, indent=2)
        # The shell tool is offered headless only where a policy allows it.
        policy = '[[rule]]\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 100\n'
        if spec.get("deny_rule"):  # the user's rule: no `echo`
            policy += '\n[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "echo"\ndecision = "deny"\npriority = 200\n'
        os.makedirs(run + "/home/.gemini/policies", exist_ok=True)
        with open(run + "/home/.gemini/policies/probe.toml", "w") as f:
            f.write(policy)
        if spec.get("mode"):
            cmd[cmd.index("--approval-mode") + 1] = spec["mode"]
    else:  # opencode: a plugin, not commands
        config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
        config["plugin"] = ["file://" + PROBE_PLUGIN]
        if spec.get("deny_rule"):
            config["permission"]["bash"] = {"*": "allow", "echo *": "deny"}  # the last match wins
        env.update(OPENCODE_CONFIG_CONTENT=json.dumps(config), PROBE_CONFIG=cfg, PROBE_HOOK=PROBE_HOOK)
        cmd[:] = ["opencode", "run", "--format", "json", H.PROMPT]
    return cmd, env


# ------------------------------------------------------------------ run one

def run_probe(cli, name):
    spec = scenarios(cli).get(name)
    if spec is None:
        raise SystemExit("no probe scenario %s for %s (see: harness.py probe list)" % (name, cli))
    run = "%s/probe-%s-%s" % (H.RUNS, cli, name)
    shutil.rmtree(run, ignore_errors=True)
    proj = run + "/proj"
    for d in (run + "/home", run + "/tmp", proj, run + "/rules"):
        os.makedirs(d)
    rules = run + "/rules/validator.yaml"
    with open(rules, "w") as f:
        f.write(H.RULES_OK)
    subprocess.run(["git", "init", "-q", proj], check=True)
    with open(proj + "/seed.txt", "w") as f:
        f.write("old line\n")
    with open(run + "/script.json", "w") as f:
        json.dump(script(cli, proj, spec), f, indent=2)
    cfg = run + "/probe-config.json"
    answers = {ev: [{k: v for k, v in r.items() if k != "hook_timeout"} for r in rs]
               for ev, rs in (spec.get("answers") or {}).items()}
    with open(cfg, "w") as f:
        json.dump({"log": run + "/probe.jsonl", "answers": answers}, f, indent=2)
    hook_timeout = [r["hook_timeout"] for rs in (spec.get("answers") or {}).values() for r in rs if "hook_timeout" in r]
    if hook_timeout:
        spec = dict(spec, hook_timeout=hook_timeout[0])
    srv, port = H.start_server(run)
    serve = None
    try:
        cmd, env = H.SETUP[cli](run, proj, rules, port)
        cmd, env = wire(cli, run, proj, rules, spec, cmd, env, cfg)
        if spec.get("serve"):  # the validator plugin judges inside `opencode serve`
            config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
            config["plugin"] = ["file://" + H.PLUGIN, "file://" + PROBE_PLUGIN]
            env.update(OPENCODE_CONFIG_CONTENT=json.dumps(config), VALIDATOR_BIN=H.VALIDATOR, VALIDATOR_RULES=rules)
            serve_port = H.free_port()
            serve = subprocess.Popen(["opencode", "serve", "--hostname", "127.0.0.1", "--port", str(serve_port)],
                                     cwd=proj, env=env, stdout=open(run + "/serve.out", "w"), stderr=subprocess.STDOUT)
            H.wait_listening(serve_port)
            cmd = ["opencode", "run", "--format", "json", "--attach", "http://127.0.0.1:%d" % serve_port, H.PROMPT]
        with open(run + "/cmd.json", "w") as f:
            json.dump({"cmd": cmd, "cwd": proj, "env": env}, f, indent=2)
        t0 = time.time()
        try:
            p = subprocess.run(cmd, cwd=proj, env=env, stdin=subprocess.DEVNULL, stdout=open(run + "/cli.out", "w"),
                               stderr=open(run + "/cli.err", "w"), timeout=H.TIMEOUT)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        if serve:
            H.settled(run)
        seconds = round(time.time() - t0, 1)
    finally:
        if serve:
            serve.terminate()
            serve.wait()
        srv.terminate()
        srv.wait()
    facts = gather(cli, name, spec, run, proj, rc, seconds)
    with open(run + "/facts.json", "w") as f:
        json.dump(facts, f, indent=2)
    print(json.dumps(facts))
    return facts


# ------------------------------------------------------------------ facts

def probe_log(run):
    path = run + "/probe.jsonl"
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []


def tool_of(entry):
    inp = entry.get("input") or {}
    if not isinstance(inp, dict):
        return None
    if "tool_name" in inp:
        return inp["tool_name"]
    return (inp.get("input") or {}).get("tool")


def where(obj, marker, path="", out=None):
    """Every string in OBJ that contains MARKER: [path, text (cut to 600 characters)]."""
    out = [] if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            where(v, marker, "%s.%s" % (path, k), out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            where(v, marker, "%s[%d]" % (path, i), out)
    elif isinstance(obj, str) and marker in obj:
        i = obj.index(marker)
        out.append([path, obj[max(0, i - 300):i + 300]])
    return out


def gather(cli, name, spec, run, proj, rc, seconds):
    reqs = H.load_log(run)
    mains = [r for r in reqs if r.get("kind") == "main"]
    log = probe_log(run)
    markers = {}
    for m in MARKERS:
        turns = [r["turn"] for r in mains if m in json.dumps(r.get("body"), ensure_ascii=False)]
        if turns:
            markers[m] = {"turns": turns, "first_at": where(mains[turns[0]]["body"], m)[:3]}
    out_text = open(run + "/cli.out", errors="replace").read()
    err_text = open(run + "/cli.err", errors="replace").read()
    facts = {
        "cli": cli, "scenario": name, "rc": rc, "seconds": seconds,
        "main_requests": len(mains),
        "hooks": ["%s:%s" % (e["event"], tool_of(e)) for e in log],
        "files": {f: os.path.exists(os.path.join(proj, f)) for f in
                  ("probe.txt", "shell.txt", "two.txt", "heredoc.txt", "answer.txt", "rewritten.txt")},
        "seed": open(proj + "/seed.txt").read().strip() if os.path.exists(proj + "/seed.txt") else None,
        "markers_in_requests": markers,
        "markers_in_cli_output": [m for m in MARKERS if m in out_text or m in err_text],
        "proxy_attempts": sorted({r["path"] for r in reqs if r.get("kind") == "proxy"}),
    }
    facts["tokens"] = tokens(cli, run, log)
    expected = load_expect().get("%s/%s" % (cli, name))
    if expected is not None:
        got = outcome(facts)
        facts["differs_from_verified"] = {k: {"verified": v, "now": got.get(k)} for k, v in expected.items()
                                          if got.get(k) != v}
        facts["ok"] = not facts["differs_from_verified"]
    return facts


def outcome(facts):
    """The part of a run's facts that PROTOCOLS.md rests on, and a rerun must reproduce."""
    return {"rc": facts["rc"], "main_requests": facts["main_requests"], "hooks": facts["hooks"],
            "files": sorted(f for f, x in facts["files"].items() if x), "seed": facts["seed"],
            "markers": {m: v["turns"] for m, v in facts["markers_in_requests"].items()},
            "tokens_match_server": facts["tokens"].get("matches_server")}


# ------------------------------------------------------------------ token usage as each CLI records it

def server_usage(run):
    path = run + "/server.usage.json"
    return json.load(open(path)) if os.path.exists(path) else {}


def transcript_paths(log):
    seen = []
    for e in log:
        inp = e.get("input") or {}
        if isinstance(inp, dict):
            for k in ("transcript_path", "agent_transcript_path"):
                if inp.get(k) and inp[k] not in seen:
                    seen.append(inp[k])
    return seen


def tokens(cli, run, log):
    out = {"server": server_usage(run)}
    try:
        if cli == "claude":
            out.update(claude_tokens(run, log))
        elif cli == "codex":
            out.update(codex_tokens(log))
        elif cli == "gemini":
            out.update(gemini_tokens(log))
        else:
            out.update(opencode_tokens(run))
        out["recorded"] = recorded(cli, out)
        main = out["server"].get("main") or {}
        out["matches_server"] = out["recorded"] == {k: main.get(k, 0) for k in out["recorded"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        out["error"] = repr(e)
    return out


def recorded(cli, t):
    """What the CLI recorded, counted the way PROTOCOLS.md says (once per message id, the last
    cumulative record, subagents' files added), in the server's normalized fields."""
    if cli == "claude":
        s = {}
        for f in t["files"].values():
            add(s, f["per_message_id"], CLAUDE_KEYS)
        return {"input": s.get("input_tokens", 0), "cache_read": s.get("cache_read_input_tokens", 0),
                "cache_write": s.get("cache_creation_input_tokens", 0), "output": s.get("output_tokens", 0)}
    if cli == "codex":
        u = {}
        for f in t["files"].values():
            u = f["last_thread_token_usage"] or {}
        return {"input": u.get("input_tokens", 0) - u.get("cached_input_tokens", 0),
                "cache_read": u.get("cached_input_tokens", 0),
                "output": u.get("output_tokens", 0) - u.get("reasoning_output_tokens", 0),
                "reasoning": u.get("reasoning_output_tokens", 0)}
    if cli == "gemini":
        s = {}
        for f in t["files"].values():
            s = f["sum_per_id"]
        return {"input": s.get("input", 0) - s.get("cached", 0), "cache_read": s.get("cached", 0),
                "output": s.get("output", 0), "reasoning": s.get("thoughts", 0)}
    return dict((t.get("message_updated") or {}).get("sum_last_per_message") or {})


def add(total, usage, keys):
    for k in keys:
        v = usage.get(k)
        if isinstance(v, int):
            total[k] = total.get(k, 0) + v


CLAUDE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def claude_file_tokens(path):
    last, every, lines = {}, {}, 0
    for line in open(path):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        msg = e.get("message") if isinstance(e.get("message"), dict) else {}
        if e.get("type") == "assistant" and isinstance(msg.get("usage"), dict):
            lines += 1
            last[msg.get("id")] = msg["usage"]
            add(every, msg["usage"], CLAUDE_KEYS)
    per_id = {}
    for u in last.values():
        add(per_id, u, CLAUDE_KEYS)
    return {"assistant_lines": lines, "message_ids": len(last), "per_message_id": per_id, "every_line": every}


def claude_tokens(run, log):
    files = {}
    for p in transcript_paths(log):
        if os.path.exists(p):
            files[p] = claude_file_tokens(p)
    # Subagents' transcripts: beside the session's, whether or not a hook named them.
    for p in list(files):
        for sub in glob.glob(p[:-len(".jsonl")] + "/subagents/*.jsonl"):
            if sub not in files:
                files[sub] = claude_file_tokens(sub)
    return {"files": files}


def codex_tokens(log):
    files = {}
    for p in transcript_paths(log):
        if not os.path.exists(p):
            continue
        counts, last_total, sum_last = 0, None, {}
        records, last_thread, sum_records = 0, None, {}
        for line in open(p):
            e = json.loads(line)
            pl = e.get("payload") or {}
            if e.get("type") == "token_usage_record":  # one per response, written before its tools run
                records += 1
                last_thread = pl.get("thread_token_usage")
                add(sum_records, pl.get("usage") or {}, (pl.get("usage") or {}).keys())
            if e.get("type") == "event_msg" and pl.get("type") == "token_count":
                counts += 1
                info = pl.get("info") or {}
                if info.get("total_token_usage"):
                    last_total = info["total_token_usage"]
                if info.get("last_token_usage"):
                    add(sum_last, info["last_token_usage"], info["last_token_usage"].keys())
        files[p] = {"token_count_events": counts, "last_total_token_usage": last_total,
                    "sum_of_last_token_usage": sum_last, "token_usage_records": records,
                    "last_thread_token_usage": last_thread, "sum_of_record_usage": sum_records}
    return {"files": files}


def gemini_tokens(log):
    files = {}
    for p in transcript_paths(log):
        if not os.path.exists(p):
            continue
        text = open(p).read()
        try:
            doc = json.loads(text)
            msgs = doc.get("messages") or []
        except ValueError:  # JSON lines
            msgs = [json.loads(l) for l in text.splitlines() if l.strip()]
        total, per_id, n = {}, {}, 0
        for m in msgs:
            if isinstance(m, dict) and isinstance(m.get("tokens"), dict):
                n += 1
                per_id[m.get("id")] = m["tokens"]
                add(total, m["tokens"], m["tokens"].keys())
        by_id = {}
        for t in per_id.values():
            add(by_id, t, t.keys())
        files[p] = {"messages_with_tokens": n, "ids": len(per_id), "sum_all": total, "sum_per_id": by_id}
    return {"files": files}


def opencode_tokens(run):
    out = {}
    events = run + "/probe.jsonl.events.jsonl"
    if os.path.exists(events):
        last = {}
        for line in open(events):
            e = json.loads(line)
            p = e.get("payload") or {}
            info = (p.get("properties") or {}).get("info") or {}
            if p.get("type") == "message.updated" and info.get("role") == "assistant" and info.get("tokens"):
                last[info["id"]] = info["tokens"]
        total = {}
        for t in last.values():
            flat = {"input": t.get("input", 0), "output": t.get("output", 0), "reasoning": t.get("reasoning", 0),
                    "cache_read": (t.get("cache") or {}).get("read", 0), "cache_write": (t.get("cache") or {}).get("write", 0)}
            add(total, flat, flat.keys())
        out["message_updated"] = {"assistant_messages": len(last), "sum_last_per_message": total}
    steps = {}
    n = 0
    for line in open(run + "/cli.out", errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        part = e.get("part") or {}
        if part.get("type") == "step-finish" and part.get("tokens"):
            n += 1
            t = part["tokens"]
            flat = {"input": t.get("input", 0), "output": t.get("output", 0), "reasoning": t.get("reasoning", 0),
                    "cache_read": (t.get("cache") or {}).get("read", 0), "cache_write": (t.get("cache") or {}).get("write", 0)}
            add(steps, flat, flat.keys())
    out["run_json_step_finish"] = {"steps": n, "sum": steps}
    return out


# ------------------------------------------------------------------ what was verified

EXPECT_FILE = os.path.join(H.HERE, "probe_expect.json")


def load_expect():
    return json.load(open(EXPECT_FILE)) if os.path.exists(EXPECT_FILE) else {}


def freeze():
    """Records the outcome of every probe run in $AGENTS_RUNS as verified (probe_expect.json).
    Run after reading the runs and writing PROTOCOLS.md from them, never blindly."""
    verified = load_expect()
    for path in sorted(glob.glob(os.path.join(H.RUNS, "probe-*", "facts.json"))):
        facts = json.load(open(path))
        verified["%s/%s" % (facts["cli"], facts["scenario"])] = outcome(facts)
    with open(EXPECT_FILE, "w") as f:
        json.dump(verified, f, indent=1, sort_keys=True)
        f.write("\n")
    print("%d outcomes in %s" % (len(verified), EXPECT_FILE))
    return 0


# ------------------------------------------------------------------ entry points

def main(args):
    if args == ["list"]:
        for cli in ("claude", "codex", "gemini", "opencode"):
            print(cli + ": " + " ".join(scenarios(cli)))
        return 0
    if args == ["capture-streams"]:
        return capture_streams()
    if args == ["freeze"]:
        return freeze()
    if args == ["all"]:
        pairs = [(c, n) for c in ("claude", "codex", "gemini", "opencode") for n in scenarios(c)]
    else:
        names = list(scenarios(args[0])) if args[1:] == ["all"] else args[1:]
        pairs = [(args[0], n) for n in names]
    results = [run_probe(c, n) for c, n in pairs]
    return 0 if all(r.get("ok", True) for r in results) else 1


def capture_streams():
    os.makedirs(CORPUS, exist_ok=True)
    ok = True
    for cli in ("claude", "codex", "gemini", "opencode"):
        for name in ("stream_pass", "stream_fail"):
            facts = run_probe(cli, name)
            ok = ok and facts.get("ok", True)
            shutil.copy("%s/probe-%s-%s/cli.out" % (H.RUNS, cli, name),
                        os.path.join(CORPUS, "%s-%s.jsonl" % (cli, name.split("_")[1])))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
