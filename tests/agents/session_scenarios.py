"""Session scenarios of harness.py: validator's Claude Code plugin installed with Claude Code's
own plugin commands, and the events around the stop (the session's start, the user's prompt,
a subagent's STATUS block) inside the real CLIs.

  claude_plugin       `claude plugin marketplace add <repo>` and `claude plugin install
                      validator@validator-gate` into the run's HOME; no hooks in any settings
                      file of the run: the installed plugin's Stop hook FAILs, then PASSes
  plugin_default      the same plugin, no rules named anywhere: the plugin's own
                      hooks/gates.json blocks a subagent that ends without a STATUS block
  plugin_missing      the same plugin, validator nowhere to be found: the user's prompt is
                      blocked with a message that says so, nothing reaches the model
  session_brief       (item 4) at SessionStart validator answers the task's brief as
                      additional context: the gate names reach the model's first request
  subagent_status     (item 7) rules with no `status` gate: a subagent whose last message has
                      no STATUS block is sent back with that feedback, then passes with one
  prompt_gate         (item 8) a gates.json whose UserPromptSubmit gate has `keywords`: a prompt
                      holding one runs it; it fails, and its output reaches the model's first
                      request as context, the prompt not blocked (the agent works on, passes)
  prompt_gate_quiet   the same rules, a prompt without the keyword: the gate does not run.
                      FAILS with Gemini CLI at main 99ab4fb: BeforeAgent's `prompt` starts with
                      the SessionStart hook's context (`<hook_context>brief</hook_context>\n\n`),
                      whose "What the gates check" holds the keyword (PROTOCOLS.md)
  prompt_to_reviewer  (item 8) the user's words, recorded at UserPromptSubmit, are in what the
                      stop's `review` gate gives its reviewer, first, as its ground truth
  reviewer_claude     `validator check` whose `review` gate runs `claude -p` with the plugin's
                      templates/reviewer-prompt.md, as the README shows: the template is the
                      reviewer's system prompt, its tools are the read-only ones, its REJECTED
                      and `- file:line:` issue fail the gate
  plugin_side_by_side (item 10) a third-party plugin (made in the run, installed with the same
                      claude plugin commands) whose hooks.json runs `validator -c
                      ${CLAUDE_PLUGIN_ROOT}/hooks/gates.json hook claude` on Stop, and the
                      project's settings running `validator hook claude` on Stop with another
                      gates.json (VALIDATOR_CONFIG, outside the project): gate A (the plugin's)
                      wants plugin-a.txt, gate B (the project's) project-b.txt. Both block the
                      first stop, both files' reasons in the next request; A's file written,
                      B alone blocks, only B's reason; B's written, the stop goes through. Each
                      file's state directory counts its own attempts

What reached the model is always checked on the wire (the model server's log of requests).
"""
import glob
import json
import os
import subprocess

H_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKETPLACE = "validator-gate"   # .claude-plugin/marketplace.json's name
PLUGIN = "validator@" + MARKETPLACE
BRIEF_GATE = "answer-file-B4"   # a gate name the brief must carry to the model
GATE_OUT = "PROMPT-GATE-OUT-K8"  # what the prompt's gate prints (then it fails)
GATE_RAN = "validator ran `commands` for this prompt"  # how the context starts
KEYWORD_PROMPT = "Create answer.txt containing the answer, then check it. End your last message with a STATUS block."
TEMPLATE = "plugin/templates/reviewer-prompt.md"
REJECTION = "answer.txt:1: the answer is not the one asked for"
MISSING = "validator is not installed"  # the plugin wrapper's answer when validator is missing
# plugin_side_by_side: a third-party plugin with a gates.json of its own, and the project's
SIDE_MARKET = "side-market"
SIDE_PLUGIN = "gatekeeper"
FILE_A, FILE_B = "plugin-a.txt", "project-b.txt"
REASON_A = "PLUGIN-GATE-A7 wants plugin-a.txt"   # what gate A prints when it fails
REASON_B = "PROJECT-GATE-B3 wants project-b.txt"  # and gate B
STATUS_WORDS = "STATUS"  # the feedback a subagent without a STATUS block gets names it
FEEDBACK_MARK = "validator: FAIL"  # the heading of validator's feedback

SCENARIOS = {
    "claude_plugin": ("claude",),
    "plugin_default": ("claude",),
    "plugin_missing": ("claude",),
    "session_brief": ("claude", "codex", "gemini"),
    "subagent_status": ("claude",),
    "prompt_gate": ("claude", "codex", "gemini"),
    "prompt_gate_quiet": ("claude", "codex", "gemini"),
    "prompt_to_reviewer": ("claude", "codex", "gemini"),
    "reviewer_claude": ("claude",),
    "plugin_side_by_side": ("claude",),
}
PLUGGED = ("claude_plugin", "plugin_default", "plugin_missing")

# The events each CLI has for a session's start and a user's prompt, as validator is wired to
# them (added to the examples' settings where they lack them).
START = {"claude": "SessionStart", "codex": "SessionStart", "gemini": "SessionStart"}
PROMPT_EVENT = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}

REVIEWER = """#!/bin/sh
# The review gate's reviewer: keeps what validator gave it (in the one directory its sandbox
# lets it write, the gate's `writable:`), approves.
cat > "$(dirname "$0")/record/review-input.md"
echo APPROVED
"""


def rules(scenario, ok):
    """The rules file of SCENARIO, from tests/agents/validator.yaml (OK)."""
    if scenario == "session_brief":
        return ok.replace("name: answer\n", "name: %s\n" % BRIEF_GATE, 1)
    if scenario == "subagent_status":  # no `status` gate: the STATUS block is required by default
        return ok.replace("      - name: status\n        rule: status\n", "", 1)
    if scenario in ("prompt_gate", "prompt_gate_quiet"):  # the hook runner's dialect (gates.json)
        return json.dumps({
            "gates": {
                "commands": {"description": "Project commands when the prompt asks for a check",
                             "command": "echo %s; exit 1" % GATE_OUT, "keywords": ["check"]},
                "answer": {"description": "answer.txt is written", "command": "test -s answer.txt"},
            },
            "hooks": {"UserPromptSubmit": {"gates": ["commands"]},
                      "Stop": {"gates": ["plan-compliance", "answer"]}},
        }, indent=2) + "\n"
    if scenario == "prompt_to_reviewer":
        return ok + ("      - name: review\n        rule: review\n        run: [\"./reviewer.sh\"]\n"
                     "        writable: [record]\n")
    if scenario == "reviewer_claude":  # README's reviewer, the template from the plugin
        return ("version: 1\nstate: .validator\npipelines:\n  - name: main\n    gates:\n"
                "      - name: review\n        rule: review\n        timeout: 2m\n"
                # The scripted model server listens on a local port, not HTTPS's.
                "        network: any\n"
                "        run: %s\n" % json.dumps(reviewer_command()))
    return ok


def reviewer_command():
    """The review gate's reviewer as the README writes it (the template's path made absolute)."""
    return ["claude", "-p", "--append-system-prompt-file", os.path.join(H_ROOT, TEMPLATE),
            "--tools", "Read,Grep,Glob,Bash",
            "--allowedTools", "Bash(git diff:*) Bash(git log:*) Bash(git show:*) Bash(git status:*)"]


def script(scenario, proj):
    path = proj + "/answer.txt"
    write = {"write": {"path": path, "rel": "answer.txt", "content": "42\n"}}
    agent = {"tool": {"name": "Agent", "input": {"description": "Write the answer",
                                                 "prompt": "Create answer.txt with the answer.",
                                                 "subagent_type": "general-purpose",
                                                 "run_in_background": False}}}
    if scenario == "claude_plugin":  # as fail_fix_pass
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}, write,
                          {"text": "Wrote answer.txt.\nSTATUS: OK"}], "after_last": "text"}
    if scenario in ("plugin_default", "subagent_status"):
        # the parent spawns a subagent; it writes, ends without a STATUS block (blocked), then
        # with one (passes); the parent ends
        return {"turns": [agent, write, {"text": "Wrote answer.txt."},
                          {"text": "Wrote answer.txt.\nSTATUS: OK"},
                          {"text": "The subagent wrote it.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "plugin_missing":
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "plugin_side_by_side":  # stop; write A's file, stop; write B's, stop
        done = {"text": "I am done.\nSTATUS: OK"}
        return {"turns": [done, {"write": {"path": proj + "/" + FILE_A, "rel": FILE_A, "content": "a\n"}},
                          done, {"write": {"path": proj + "/" + FILE_B, "rel": FILE_B, "content": "b\n"}},
                          done], "after_last": "text"}
    if scenario == "reviewer_claude":  # the reviewer model's answer, after a preamble
        return {"turns": [{"text": "I read the request and the patch.\n\n**REJECTED**\n- %s" % REJECTION}],
                "after_last": "repeat"}
    # session_brief, prompt_gate, prompt_to_reviewer: as pass
    return {"turns": [write, {"text": "Wrote answer.txt.\nSTATUS: OK"}], "after_last": "text"}


def events_file(scenario, run):
    """validator's event log: beside the rules file (the state directory `.validator`)."""
    if scenario == "plugin_default":  # the plugin's own gates.json, copied into its data directory
        found = glob.glob(run + "/home/.claude/plugins/data/*/.validator/events.jsonl")
        return found[0] if found else run + "/no-events.jsonl"
    return run + "/rules/.validator/events.jsonl"


def side_events(run):
    """plugin_side_by_side's two event logs: the plugin's (its gates.json's `.validator`, wherever
    Claude Code ran the plugin from) and the project's (beside its gates.json in rules/)."""
    found = sorted(glob.glob(run + "/market/**/hooks/.validator/events.jsonl", recursive=True) +
                   glob.glob(run + "/home/.claude/plugins/**/hooks/.validator/events.jsonl", recursive=True))
    return found, run + "/rules/.validator/events.jsonl"


def installed_path(run):
    try:
        with open(run + "/home/.claude/plugins/installed_plugins.json") as f:
            return json.load(f)["plugins"][PLUGIN][0]["installPath"]
    except (OSError, ValueError, KeyError, IndexError):
        return None


# ------------------------------------------------------------------ setting a run up

def prepare(H, cli, scenario, run, proj, rules, cmd, env):
    """Changes the run's CLI command and environment, and its files, for SCENARIO."""
    if scenario in PLUGGED:
        install_plugin(H, scenario, run, proj, env)
    elif scenario == "plugin_side_by_side":
        side_by_side(H, run, proj, env)
    else:
        wire_session_events(cli, proj)
    if scenario == "prompt_gate":
        cmd = [KEYWORD_PROMPT if a == H.PROMPT else a for a in cmd]
    if scenario == "reviewer_claude":  # validator runs claude, not the other way round
        os.remove(proj + "/.claude/settings.json")
        git = ["git", "-C", proj, "-c", "user.name=e2e", "-c", "user.email=e2e@validator.invalid"]
        subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "seed"], check=True)
        with open(proj + "/answer.txt", "w") as f:
            f.write("41\n")
        with open(run + "/done.txt", "w") as f:
            f.write("Wrote answer.txt.\nSTATUS: OK\n")
        cmd = [H.VALIDATOR, "-c", rules, "check", "--task-dir", proj, "--signal", run + "/done.txt",
               "--format", "json"]
    if scenario == "prompt_to_reviewer":  # the review's patch is taken against a first commit
        reviewer = os.path.join(os.path.dirname(rules), "reviewer.sh")
        os.makedirs(os.path.join(os.path.dirname(rules), "record"), exist_ok=True)
        with open(reviewer, "w") as f:
            f.write(REVIEWER)
        os.chmod(reviewer, 0o755)
        git = ["git", "-C", proj, "-c", "user.name=e2e", "-c", "user.email=e2e@validator.invalid"]
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "seed"], check=True)
    return cmd, env


def install_plugin(H, scenario, run, proj, env):
    """The plugin, installed as a person would: Claude Code's own commands, the repository as
    the marketplace. No hook in any settings file of the run but the plugin's; validator on
    PATH (not for plugin_missing); the rules by VALIDATOR_CONFIG (not for plugin_default)."""
    settings = proj + "/.claude/settings.json"
    if os.path.exists(settings):
        os.remove(settings)
    if scenario == "plugin_default":
        env.pop("VALIDATOR_CONFIG", None)
    if scenario != "plugin_missing":
        bindir = run + "/bin"
        os.makedirs(bindir, exist_ok=True)
        os.symlink(H.VALIDATOR, bindir + "/validator")
        env["PATH"] = bindir + ":" + env["PATH"]
    log = []
    for args in (["plugin", "marketplace", "add", H.ROOT], ["plugin", "install", PLUGIN]):
        p = subprocess.run(["claude"] + args, cwd=proj, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=120)
        log.append({"args": args, "rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr})
    with open(run + "/plugin-install.json", "w") as f:
        json.dump(log, f, indent=2)
    if scenario == "plugin_missing":  # not even through the environment
        env.pop("VALIDATOR_BIN", None)


def gate_file(gate, wanted, reason):
    """A gates.json whose Stop runs one gate: WANTED written (non-empty), else REASON."""
    return json.dumps({
        "gates": {gate: {"description": "%s is written" % wanted,
                         "command": "test -s %s || { echo '%s'; exit 1; }" % (wanted, reason)}},
        "hooks": {"Stop": {"gates": [gate]}},
    }, indent=2) + "\n"


def side_by_side(H, run, proj, env):
    """A throwaway third-party plugin (a local marketplace in RUN/market) whose hooks.json runs
    validator with the plugin's own gates.json, installed with Claude Code's plugin commands;
    the project's settings run validator on Stop with the person's gates.json, named by
    VALIDATOR_CONFIG as examples/hooks does (the plugin's `-c` must win over it)."""
    market = run + "/market"
    root = market + "/" + SIDE_PLUGIN
    os.makedirs(market + "/.claude-plugin")
    os.makedirs(root + "/.claude-plugin")
    os.makedirs(root + "/hooks")
    files = {
        market + "/.claude-plugin/marketplace.json": {
            "name": SIDE_MARKET, "owner": {"name": "e2e"},
            "plugins": [{"name": SIDE_PLUGIN, "source": "./" + SIDE_PLUGIN, "version": "0.0.1",
                         "description": "a gates.json plugin of its own"}]},
        root + "/.claude-plugin/plugin.json": {"name": SIDE_PLUGIN, "version": "0.0.1",
                                               "description": "a gates.json plugin of its own"},
        root + "/hooks/hooks.json": {"hooks": {"Stop": [{"hooks": [{
            "type": "command", "timeout": 600,
            "command": 'validator -c "${CLAUDE_PLUGIN_ROOT}/hooks/gates.json" hook claude --deadline 9m50s'}]}]}},
    }
    for path, doc in files.items():
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
    with open(root + "/hooks/gates.json", "w") as f:
        f.write(gate_file("plugin-file", FILE_A, REASON_A))
    project_rules = run + "/rules/gates.json"
    with open(project_rules, "w") as f:
        f.write(gate_file("project-file", FILE_B, REASON_B))
    env["VALIDATOR_CONFIG"] = project_rules
    with open(proj + "/.claude/settings.json", "w") as f:  # only the Stop hook
        json.dump({"hooks": {"Stop": hook_entry("claude", "validator hook claude --deadline 9m50s", 600)}},
                  f, indent=2)
    bindir = run + "/bin"
    os.makedirs(bindir, exist_ok=True)
    os.symlink(H.VALIDATOR, bindir + "/validator")
    env["PATH"] = bindir + ":" + env["PATH"]
    log = []
    for args in (["plugin", "marketplace", "add", market],
                 ["plugin", "install", SIDE_PLUGIN + "@" + SIDE_MARKET]):
        p = subprocess.run(["claude"] + args, cwd=proj, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=120)
        log.append({"args": args, "rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr})
    with open(run + "/plugin-install.json", "w") as f:
        json.dump(log, f, indent=2)


def hook_entry(cli, command, seconds):
    hook = {"type": "command", "command": command, "timeout": seconds}
    if cli == "gemini":
        hook = dict(hook, name="validator", timeout=seconds * 1000)
    return [{"hooks": [hook]}]


def wire_session_events(cli, proj):
    """The session's start and the user's prompt wired to validator, where the examples'
    settings do not wire them already (as they are being added to examples/hooks)."""
    path = {"claude": "/.claude/settings.json", "codex": "/.codex/hooks.json",
            "gemini": "/.gemini/settings.json"}[cli]
    settings = json.load(open(proj + path))
    hooks = settings["hooks"]
    stop = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent"}[cli]
    command = hooks[stop][0]["hooks"][0]["command"].split(" --deadline")[0]
    hooks.setdefault(START[cli], hook_entry(cli, command + " --deadline 50s", 60))
    hooks.setdefault(PROMPT_EVENT[cli], hook_entry(cli, command + " --deadline 50s", 60))
    with open(proj + path, "w") as f:
        json.dump(settings, f, indent=2)


# ------------------------------------------------------------------ what must hold

def body(request):
    return json.dumps(request.get("body"), ensure_ascii=False) if request else ""


def since_reply(request):
    """What a request adds after the model's last reply (the stop hooks' feedback, here)."""
    messages = (request.get("body") or {}).get("messages") or [] if request else []
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return json.dumps(messages[last + 1:], ensure_ascii=False)


def read_events(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def check_side_by_side(run, proj, rc, mains, res, c):
    """plugin_side_by_side: both files judged each stop, each in its own state directory."""
    log = json.load(open(run + "/plugin-install.json"))
    c["installed"] = all(step["rc"] == 0 for step in log)
    plugin_logs, project_log = side_events(run)
    res["plugin_event_logs"] = plugin_logs
    logs = {"plugin": read_events(plugin_logs[0]) if len(plugin_logs) == 1 else [],
            "project": read_events(project_log)}
    for who, ev in logs.items():
        res[who + "_verdicts"] = ["%s/%s" % (e["details"].get("verdict"), e["details"].get("answer"))
                                  for e in ev if e.get("event") == "hook_answered"]
        res[who + "_attempts"] = [e["details"].get("attempt") for e in ev if e.get("event") == "hook_run"]
    c["one_plugin_state_dir"] = len(plugin_logs) == 1
    c["plugin_verdicts"] = res["plugin_verdicts"] == ["FAIL/block", "PASS/pass", "PASS/pass"]
    c["project_verdicts"] = res["project_verdicts"] == ["FAIL/block", "FAIL/block", "PASS/pass"]
    # A pass ends the plugin file's round (its third stop is attempt 1 again) while the
    # project's goes on to 3: two counts, neither moved by the other's answers
    c["own_attempts"] = res["plugin_attempts"] == [1, 2, 1] and res["project_attempts"] == [1, 2, 3]
    added = [since_reply(m) for m in mains]
    res["reasons_added"] = [[r for r in (REASON_A, REASON_B) if r in a] for a in added]
    # main 1 follows the first stop, main 3 the second; main 5 would follow a third block
    c["both_reasons_first"] = len(added) > 1 and REASON_A in added[1] and REASON_B in added[1]
    c["only_b_second"] = len(added) > 3 and REASON_B in added[3] and REASON_A not in added[3]
    # Claude Code names a blocking hook's command as written: `${CLAUDE_PLUGIN_ROOT}`, not where
    c["plugin_path_not_shown"] = not any(run + "/market" in body(m) for m in mains)
    c["stopped"] = len(mains) == 5 and rc == 0 and all(
        os.path.exists(proj + "/" + f) for f in (FILE_A, FILE_B))
    return all(c.values())


def check(cli, scenario, run, proj, rc, mains, res, prompt):
    """Whether SCENARIO held; the details land in res["checks"]."""
    if scenario == "plugin_side_by_side":
        res["checks"] = {}
        return check_side_by_side(run, proj, rc, mains, res, res["checks"])
    ev = []
    path = events_file(scenario, run)
    if os.path.exists(path):
        ev = [json.loads(line) for line in open(path) if line.strip()]
    answered = [e for e in ev if e.get("event") == "hook_answered"]
    res["verdicts"] = ["%s/%s" % (e["details"].get("verdict"), e["details"].get("answer")) for e in answered]
    res["agents"] = [e.get("agent") for e in answered]
    c = {}
    first = body(mains[0]) if mains else ""
    if scenario in PLUGGED:
        log = json.load(open(run + "/plugin-install.json"))
        c["installed"] = all(step["rc"] == 0 for step in log) and installed_path(run) is not None
        c["no_settings_hooks"] = not os.path.exists(proj + "/.claude/settings.json")
    if scenario == "claude_plugin":  # as fail_fix_pass, through the installed plugin's hooks
        fb = res["feedback_seen_in_main_turns"]
        c["flow"] = res["answer_exists"] and len(mains) == 3 and fb[:1] == [1] and rc == 0
        c["verdicts"] = res["verdicts"] == ["FAIL/block", "PASS/pass"]
    elif scenario in ("plugin_default", "subagent_status"):
        # the subagent: blocked for want of a STATUS block, the feedback in its next request
        # (turn 3), then passed; the parent's stop its own session
        reasons = " ".join(answered[0]["details"].get("reasons") or []) if answered else ""
        c["verdicts"] = res["verdicts"][:2] == ["FAIL/block", "PASS/pass"]
        c["blocked_for_status"] = STATUS_WORDS in reasons
        c["feedback_in_next_request"] = len(mains) > 3 and FEEDBACK_MARK in body(mains[3]) and \
            STATUS_WORDS in body(mains[3]).split(FEEDBACK_MARK, 1)[-1] and FEEDBACK_MARK not in body(mains[2])
        c["same_subagent"] = len(res["agents"]) >= 2 and res["agents"][0] == res["agents"][1]
        c["answer"] = res["answer_exists"] and rc == 0
        res["first_block_reasons"] = reasons
        if scenario == "subagent_status":  # the parent judged too, by the rules (it passes)
            c["parent"] = res["verdicts"][2:] == ["PASS/pass"] and res["agents"][2] != res["agents"][0]
        else:  # the plugin's gates.json binds only SubagentStop: the parent's stop is not judged
            c["parent"] = len(res["verdicts"]) == 2
            # its state in the plugin's data directory, never beside the plugin's own files
            c["state_in_plugin_data"] = os.path.exists(events_file(scenario, run)) and \
                not os.path.exists(os.path.join(H_ROOT, "plugin", "hooks", ".validator"))
    elif scenario == "plugin_missing":  # the prompt refused: nothing reached the model
        out = open(run + "/cli.out", errors="replace").read() + open(run + "/cli.err", errors="replace").read()
        c["no_model_request"] = len(mains) == 0
        c["person_told"] = MISSING in out
        c["nothing_judged"] = not ev
    elif scenario == "session_brief":
        c["brief_in_first_request"] = BRIEF_GATE in first
        c["verdicts"] = res["verdicts"][-1:] == ["PASS/pass"]
    elif scenario == "prompt_gate":
        c["gate_output_in_first_request"] = GATE_OUT in first and GATE_RAN in first
        c["prompt_not_blocked"] = res["answer_exists"] and len(mains) == 2
        c["verdicts"] = res["verdicts"][-1:] == ["PASS/pass"]
    elif scenario == "reviewer_claude":
        out = open(run + "/cli.out", errors="replace").read()
        c["gate_failed"] = rc == 1 and REJECTION in out
        system = json.dumps((mains[0].get("body") or {}).get("system")) if mains else ""
        c["template_is_system_prompt"] = "# Adversarial reviewer" in system
        c["context_on_stdin"] = "# Review: task" in json.dumps((mains[0].get("body") or {}).get("messages")) if mains else False
        tools = sorted(t.get("name") for t in (mains[0].get("body") or {}).get("tools") or []) if mains else []
        res["reviewer_tools"] = tools
        # (Claude Code adds a DeferredToolPlaceholder of its own, which runs nothing)
        c["read_only_tools"] = {"Bash", "Glob", "Grep", "Read"} <= set(tools) and not set(tools) & {
            "Write", "Edit", "NotebookEdit", "WebFetch", "WebSearch", "Agent", "Task"}
    elif scenario == "prompt_gate_quiet":
        c["gate_not_run"] = bool(mains) and GATE_RAN not in first and GATE_OUT not in json.dumps(
            [m.get("body") for m in mains])
        c["verdicts"] = res["verdicts"][-1:] == ["PASS/pass"]
    elif scenario == "prompt_to_reviewer":
        review = run + "/rules/record/review-input.md"
        text = open(review, errors="replace").read() if os.path.exists(review) else ""
        c["prompt_given_to_reviewer"] = prompt in text
        c["verdicts"] = res["verdicts"][-1:] == ["PASS/pass"]
    res["checks"] = c
    return all(c.values())
