#!/usr/bin/env python3
"""End-to-end harness: real agent CLI + scripted model server + validator stop hook.

  python3 harness.py CLI SCENARIO        CLI in claude|codex|gemini|opencode, SCENARIO one of SCENARIOS
  python3 harness.py all [SCENARIO...]   every CLI x every scenario (or those named)
  python3 harness.py probe CLI SCENARIO  a probe of the CLI's tool hooks (probes.py; not in `all`)
  python3 harness.py capture-streams     rewrite tests/corpus/agent-streams (probes.py)

Each run happens in its own network namespace (unshare -n, only loopback up), so
nothing can leave the machine whatever the CLI tries; HTTPS_PROXY points at the model
server, which logs (and refuses) any proxied attempt, so non-essential traffic shows up
in the log as kind=proxy.

The CLIs come from $AGENTS_WORK/node_modules (tests/agents/run.sh installs them; default
target/agents). validator is $VALIDATOR_BIN (default target/debug/validator). Without
permission for a network namespace (a container without CAP_SYS_ADMIN) the runs still go only
to the scripted server by configuration, and the proxy sink still reports what tried to leave.

The tool-time scenarios (validator answering the CLIs' pre-tool and post-tool events, and the
session breakers) are specified and checked in tool_scenarios.py; the session scenarios (the
Claude Code plugin installed with Claude Code's own commands, the session's start, the user's
prompt, a subagent's STATUS block, the review gate's claude reviewer) in session_scenarios.py;
the confinement scenarios (shell calls under `validator exec`, an agent under `validator run`) in
confine_scenarios.py, run and checked as tool-time ones.
Every run is also checked for what no scenario may do: traffic off loopback, and a model request
that names the rules file.

Run dir ($AGENTS_RUNS, default $AGENTS_WORK/runs): RUNS/CLI-SCENARIO/{home,proj,rules,server.jsonl,script.json,cli.out,cli.err,result.json}
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

import confine_scenarios as CS
import session_scenarios as SS
import tool_scenarios as TS

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
E2E = os.path.abspath(os.environ.get("AGENTS_WORK", os.path.join(ROOT, "target", "agents")))
BIN = E2E + "/node_modules/.bin"
VALIDATOR = os.path.abspath(os.environ.get("VALIDATOR_BIN", os.path.join(ROOT, "target", "debug", "validator")))
EXAMPLES = os.path.join(ROOT, "examples", "hooks")
# Where each run's directory goes: several checkouts may share one AGENTS_WORK's CLIs.
RUNS = os.path.abspath(os.environ.get("AGENTS_RUNS", os.path.join(E2E, "runs")))
PROMPT = "Create answer.txt containing the answer. End your last message with a STATUS block."
FEEDBACK_MARK = "validator: FAIL"            # validator's feedback heading ...
FEEDBACK_REASON = "`answer.txt`: no file matches"  # ... and its reason, both must reach the model
TIMEOUT = 180
SCENARIOS = ("fail_fix_pass", "pass", "breaker", "breaker_attempts", "error", "error_verdict",
             "agent_cap", "status_retry", "subagent", "loop", "loop_breaker", "loop_json",
             "plugin", "plugin_breaker") + tuple(TS.SCENARIOS) + tuple(SS.SCENARIOS)
# Scenarios only some agents have: Claude Code's subagents (its Agent tool, SubagentStop); the
# hookless loop (examples/agent-loop) with the CLIs whose sessions it continues; the tool-time
# scenarios (tool_scenarios.py), OpenCode's through the plugin.
ONLY = dict({"subagent": ("claude",), "loop": ("claude", "codex", "opencode"),
             "loop_breaker": ("claude", "codex", "opencode"),
             "loop_json": ("claude", "codex", "gemini", "opencode"),
             "plugin": ("opencode",), "plugin_breaker": ("opencode",)}, **TS.SCENARIOS, **SS.SCENARIOS)
LOOPING = ("loop", "loop_breaker", "loop_json")
PLUGIN = os.path.join(ROOT, "examples", "hooks", "opencode", "validator.js")
# Agents run only in some scenarios: OpenCode has no blocking stop hook, only the loop.
HOOKLESS = ("opencode",)
LOOP = os.path.join(ROOT, "examples", "agent-loop", "run.sh")
KNOWN_REFUSED = {"opencode": ("registry.npmjs.org:443",)}
# The agent command the loop runs, as examples/agent-loop/README.md writes it.
LOOP_WRAPPERS = {
    "claude": 'if [ "$VALIDATOR_LOOP_ATTEMPT" -gt 1 ]; then c=--continue; fi; '
              'exec claude -p ${c:-} "$PROMPT $(cat -)" --permission-mode acceptEdits --model claude-sonnet-4-5',
    "opencode": 'if [ "$VALIDATOR_LOOP_ATTEMPT" -gt 1 ]; then c=--continue; fi; '
                'exec opencode run ${c:-} "$PROMPT $(cat -)"',
    "codex": 'if [ "$VALIDATOR_LOOP_ATTEMPT" -gt 1 ]; then set -- resume --last; fi; '
             'exec codex exec "$@" -c sandbox_mode=danger-full-access --skip-git-repo-check '
             '-o "$VALIDATOR_LAST_MESSAGE" "$PROMPT $(cat -)"',
}
# The same with each CLI's machine-readable output, which the loop signals as the done body
# (no last-message file): validator judges the stream by its final message.
LOOP_JSON_WRAPPERS = {
    "claude": 'if [ "$VALIDATOR_LOOP_ATTEMPT" -gt 1 ]; then c=--continue; fi; '
              'exec claude -p ${c:-} "$PROMPT $(cat -)" --output-format stream-json --verbose '
              '--permission-mode acceptEdits --model claude-sonnet-4-5',
    "opencode": 'if [ "$VALIDATOR_LOOP_ATTEMPT" -gt 1 ]; then c=--continue; fi; '
                'exec opencode run ${c:-} --format json "$PROMPT $(cat -)"',
    "codex": 'if [ "$VALIDATOR_LOOP_ATTEMPT" -gt 1 ]; then set -- resume --last; fi; '
             'exec codex exec "$@" -c sandbox_mode=danger-full-access --json --skip-git-repo-check '
             '"$PROMPT $(cat -)"',
    "gemini": 'if [ "$VALIDATOR_LOOP_ATTEMPT" -gt 1 ]; then set -- --resume latest; fi; '
              'exec gemini "$@" -p "$PROMPT $(cat -)" --output-format stream-json --approval-mode auto_edit '
              '--model gemini-2.5-pro',
}

RULES_OK = open(os.path.join(HERE, "validator.yaml")).read()
RULES_BROKEN = "version: 1\npipelines:\n  - name: agent\n    gates:\n      - name: answer\n        rule: exists\n        pathz: [answer.txt]\n"


def rules_for(scenario, run=None):
    if scenario in TS.SCENARIOS:
        return TS.rules(scenario, RULES_OK, RULES_BROKEN)
    if scenario in SS.SCENARIOS:  # session_scenarios.py: the plugin, the session's other events
        return SS.rules(scenario, RULES_OK)
    if scenario in LOOPING:  # the sidecar's staging holds the project
        return RULES_OK.replace("version: 1\n", "version: 1\nstaging: %s/staging\nverdicts: %s/verdicts\n"
                                % (run, run), 1).replace("strikes: 3", "strikes: 10")
    return rules_for_hook(scenario)


def rules_for_hook(scenario):
    if scenario == "error":  # not a valid rules file: each stop held, counted, then stopped
        return RULES_BROKEN
    if scenario == "error_verdict":  # valid rules, a gate whose program is missing: ERROR verdict
        return RULES_OK + "      - name: lint\n        rule: lint\n        run: [\"no-such-linter-e2e\"]\n"
    if scenario == "breaker_attempts":  # strikes out of reach: max_attempts (3) ends the loop at stop 4
        return RULES_OK.replace("strikes: 3", "strikes: 10")
    if scenario == "agent_cap":  # breakers past what the agent itself allows in a row
        return RULES_OK.replace("strikes: 3", "strikes: 30").replace("max_attempts: 3", "max_attempts: 20")
    return RULES_OK


def in_netns():
    return os.environ.get("E2E_NETNS") == "1"


def netns_available():
    try:
        return subprocess.run(["unshare", "-n", "true"], stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def reexec_in_netns():
    cmd = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
           sys.executable] + sys.argv
    env = dict(os.environ, E2E_NETNS="1")
    sys.exit(subprocess.call(cmd, env=env))


# ------------------------------------------------------------------ scripts

def script_for(scenario, proj):
    """The scripted model of a stop-hook or loop scenario (the tool-time ones: tool_scenarios.py)."""
    if scenario in SS.SCENARIOS:
        return SS.script(scenario, proj)
    path = proj + "/answer.txt"
    write = {"write": {"path": path, "rel": "answer.txt", "content": "42\n"}}
    if scenario == "fail_fix_pass":
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}, write,
                          {"text": "Wrote answer.txt.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "pass":
        return {"turns": [write, {"text": "Wrote answer.txt.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "subagent":  # a subagent fails, fixes and passes; then its parent stops
        agent = {"tool": {"name": "Agent", "input": {"description": "Write the answer",
                                                     "prompt": "Create answer.txt with the answer.",
                                                     "subagent_type": "general-purpose",
                                                     "run_in_background": False}}}
        return {"turns": [agent, {"text": "Sub done.\nSTATUS: OK"}, write,
                          {"text": "Wrote answer.txt.\nSTATUS: OK"},
                          {"text": "The subagent wrote it.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "plugin":  # as fail_fix_pass, OpenCode's plugin doing what a stop hook does
        return script_for("fail_fix_pass", proj)
    if scenario == "plugin_breaker":
        return script_for("breaker", proj)
    if scenario in ("loop", "loop_json"):  # as fail_fix_pass, the loop doing what the hook did
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}, write,
                          {"text": "Wrote answer.txt.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "loop_breaker":
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}], "after_last": "repeat"}
    if scenario == "status_retry":  # the retry forgets its STATUS block: judged on its own words
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}, write, {"text": "Wrote answer.txt."},
                          {"text": "Wrote answer.txt.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "breaker":  # never writes the file: validator's max_attempts must end it
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}], "after_last": "repeat"}
    if scenario in ("breaker_attempts", "agent_cap"):
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}], "after_last": "repeat"}
    if scenario == "error_verdict":  # the file is written, then the lint gate's tool is missing
        return {"turns": [write, {"text": "Wrote answer.txt.\nSTATUS: OK"}], "after_last": "text"}
    if scenario == "error":  # broken rules: held 3 times (max_attempts by default), then stopped
        return {"turns": [{"text": "I am done.\nSTATUS: OK"}], "after_last": "repeat"}
    raise SystemExit("unknown scenario " + scenario)


def hook_command(agent, rules):
    return "%s -c %s hook %s" % (VALIDATOR, rules, agent)


def example_settings(rel, agent, rules):
    """The example's settings with validator's path; the rules file is named by VALIDATOR_CONFIG
    in the agent's environment (base_env), as examples/hooks says, never on the command line
    (Claude Code shows a blocking hook's command line to its model)."""
    text = open(os.path.join(EXAMPLES, rel)).read()
    settings = json.loads(text)
    # Every call of validator in a command (the Codex and Gemini CLI commands also ask it
    # `--version` and answer for it when it cannot run).
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                command = hook["command"]
                for call in ("validator hook ", "validator --version"):
                    command = command.replace(call, call.replace("validator", VALIDATOR, 1))
                hook["command"] = command
    return settings


def base_env(run, port):
    home = run + "/home"
    env = {
        "PATH": BIN + ":/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "USER": "e2e",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
        "TMPDIR": run + "/tmp",
        "XDG_CONFIG_HOME": home + "/.config",
        "XDG_CACHE_HOME": home + "/.cache",
        "XDG_DATA_HOME": home + "/.local/share",
        "XDG_STATE_HOME": home + "/.local/state",
        # Anything that honours a proxy is caught by the model server's proxy sink.
        "HTTPS_PROXY": "http://127.0.0.1:%d" % port,
        "HTTP_PROXY": "http://127.0.0.1:%d" % port,
        "https_proxy": "http://127.0.0.1:%d" % port,
        "http_proxy": "http://127.0.0.1:%d" % port,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    return env


# ------------------------------------------------------------------ per-CLI setup

def setup_claude(run, proj, rules, port):
    env = base_env(run, port)
    env.update({
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % port,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
        "DISABLE_COST_WARNINGS": "1",
        "DISABLE_INSTALLATION_CHECKS": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    })
    os.makedirs(proj + "/.claude", exist_ok=True)
    with open(proj + "/.claude/settings.json", "w") as f:
        json.dump(example_settings("claude/settings.json", "claude", rules), f, indent=2)
    cmd = ["claude", "-p", PROMPT, "--output-format", "stream-json", "--verbose",
           "--permission-mode", "acceptEdits", "--model", "claude-sonnet-4-5",
           "--max-turns", "20"]
    cmd += os.environ.get("E2E_CLAUDE_EXTRA", "").split()  # experiments only
    return cmd, env


def setup_codex(run, proj, rules, port):
    env = base_env(run, port)
    codex_home = run + "/home/.codex"
    os.makedirs(codex_home, exist_ok=True)
    env.update({"CODEX_HOME": codex_home, "SCRIPTED_API_KEY": "sk-e2e-dummy"})
    cfg = f'''# written by tests/agents/harness.py
model = "gpt-5.5"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[features]
plugins = false

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[projects."{proj}"]
trust_level = "trusted"
'''
    if os.environ.get("E2E_CODEX_UNTRUSTED"):  # experiment: project not trusted
        cfg = cfg.split("[projects.")[0]
    with open(codex_home + "/config.toml", "w") as f:
        f.write(cfg)
    hooks_dir = proj + "/.codex"
    if os.environ.get("E2E_CODEX_USER_HOOKS"):  # experiment: hooks in $CODEX_HOME/hooks.json, project untrusted
        hooks_dir = codex_home
        cfg = cfg.split("[projects.")[0]
        with open(codex_home + "/config.toml", "w") as f:
            f.write(cfg)
    os.makedirs(hooks_dir, exist_ok=True)
    with open(hooks_dir + "/hooks.json", "w") as f:
        json.dump(example_settings("codex/hooks.json", "codex", rules), f, indent=2)
    cmd = ["codex", "exec", "--json", "--strict-config", "--skip-git-repo-check",
           "--dangerously-bypass-hook-trust", "-C", proj]
    cmd += os.environ.get("E2E_CODEX_EXTRA", "").split()
    if os.environ.get("E2E_CODEX_NOJSON"):
        cmd.remove("--json")
    if os.environ.get("E2E_CODEX_NO_BYPASS"):  # experiment: without the hook-trust bypass
        cmd.remove("--dangerously-bypass-hook-trust")
    cmd.append(PROMPT)
    return cmd, env


def setup_gemini(run, proj, rules, port):
    env = base_env(run, port)
    env.update({
        "GEMINI_API_KEY": "e2e-dummy",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:%d" % port,
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "GEMINI_TELEMETRY_ENABLED": "false",
    })
    gdir = run + "/home/.gemini"
    os.makedirs(gdir, exist_ok=True)
    user = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": True}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    # Default: folderTrust as shipped (on) and this project trusted in ~/.gemini/trustedFolders.json.
    ft = os.environ.get("E2E_GEMINI_FOLDERTRUST", "file")  # experiment: "1" trust on, "skip" trust on + --skip-trust
    if os.environ.get("E2E_GEMINI_LOUD"):  # experiment: shipped defaults for stats/telemetry/updates
        for k in ("privacy", "telemetry", "general"):
            user.pop(k)
        env.pop("GEMINI_TELEMETRY_ENABLED")
    if ft == "off":
        user["security"]["folderTrust"]["enabled"] = False
    if ft == "default":
        del user["security"]["folderTrust"]
    if ft == "env":
        env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
    if ft == "file":
        with open(gdir + "/trustedFolders.json", "w") as f:
            json.dump({proj: "TRUST_FOLDER"}, f)
    with open(gdir + "/settings.json", "w") as f:
        json.dump(user, f, indent=2)
    # Headless, the shell tool is offered only where a policy allows it (PROTOCOLS.md).
    os.makedirs(gdir + "/policies", exist_ok=True)
    with open(gdir + "/policies/shell.toml", "w") as f:
        f.write('[[rule]]\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 100\n')
    os.makedirs(proj + "/.gemini", exist_ok=True)
    with open(proj + "/.gemini/settings.json", "w") as f:
        json.dump(example_settings("gemini/settings.json", "gemini", rules), f, indent=2)
    cmd = ["gemini", "-p", PROMPT, "--output-format", "stream-json", "--approval-mode", "auto_edit",
           "--model", "gemini-2.5-pro"]
    if ft == "skip":
        cmd.append("--skip-trust")
    return cmd, env


def setup_opencode(run, proj, rules, port):
    env = base_env(run, port)
    env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"})
    config = {"provider": {"anthropic": {"options": {"baseURL": "http://127.0.0.1:%d/v1" % port,
                                                     "apiKey": "sk-ant-e2e-dummy"}}},
              "model": "anthropic/claude-sonnet-4-5", "autoupdate": False, "share": "disabled",
              "permission": {"edit": "allow", "bash": "allow"}}
    # Inline, not in a config directory: OpenCode installs its plugin package from npm into
    # every config directory it finds.
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    return ["opencode", "run", PROMPT], env


SETUP = {"claude": setup_claude, "codex": setup_codex, "gemini": setup_gemini,
         "opencode": setup_opencode}


# ------------------------------------------------------------------ run one

def run_one(cli, scenario):
    run = "%s/%s-%s" % (RUNS, cli, scenario)
    shutil.rmtree(run, ignore_errors=True)
    looping = scenario in LOOPING
    tooltime = scenario in TS.SCENARIOS
    serving = cli == "opencode" and (scenario.startswith("plugin") or tooltime)
    proj = run + ("/staging/proj" if looping else "/proj")
    for d in (run + "/home", run + "/tmp", proj, run + "/rules"):
        os.makedirs(d)
    rules = run + "/rules/validator.yaml"
    with open(rules, "w") as f:
        f.write(rules_for(scenario, run))
    subprocess.run(["git", "init", "-q", proj], check=True)
    spec = TS.spec(cli, scenario, proj) if tooltime else None
    with open(run + "/script.json", "w") as f:
        json.dump(TS.script(spec) if tooltime else script_for(scenario, proj), f, indent=2)
    srv, port = start_server(run)
    try:
        cmd, env = SETUP[cli](run, proj, rules, port)
        env["VALIDATOR_CONFIG"] = rules  # as examples/hooks says: never on the hook's command line
        watcher = None
        if looping:  # no hook: the loop and a sidecar judge instead
            for hooks in (".claude/settings.json", ".codex/hooks.json", ".gemini/settings.json"):
                if os.path.exists(os.path.join(proj, hooks)):
                    os.remove(os.path.join(proj, hooks))
            env.update(VALIDATOR=VALIDATOR, VALIDATOR_FLAGS="-c " + rules, WAIT_TIMEOUT="60s",
                       PROMPT=PROMPT)
            wrapper = (LOOP_JSON_WRAPPERS if scenario == "loop_json" else LOOP_WRAPPERS)[cli]
            cmd = ["sh", LOOP, "proj", "sh", "-c", wrapper]
            watcher = subprocess.Popen([VALIDATOR, "-c", rules, "watch"], env=env,
                                       stdout=open(run + "/watch.out", "w"), stderr=subprocess.STDOUT)
        if scenario in CS.SCENARIOS:  # before the first commit: the project's own settings change
            cmd, env = CS.prepare(sys.modules[__name__], cli, scenario, run, proj, rules, cmd, env)
        if tooltime:
            prepare_tooltime(cli, scenario, proj)
        if scenario in SS.SCENARIOS:
            cmd, env = SS.prepare(sys.modules[__name__], cli, scenario, run, proj, rules, cmd, env)
        if serving:  # `opencode serve` runs the plugin; `run --attach` drives it
            config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
            config["plugin"] = ["file://" + PLUGIN]
            env.update(OPENCODE_CONFIG_CONTENT=json.dumps(config), VALIDATOR_BIN=VALIDATOR,
                       VALIDATOR_RULES=rules)
            serve_port = free_port()
            watcher = subprocess.Popen(["opencode", "serve", "--hostname", "127.0.0.1", "--port", str(serve_port)],
                                       cwd=proj, env=env, stdout=open(run + "/serve.out", "w"),
                                       stderr=subprocess.STDOUT)
            wait_listening(serve_port)
            cmd = ["opencode", "run", "--attach", "http://127.0.0.1:%d" % serve_port, PROMPT]
        for k in filter(None, os.environ.get("E2E_DROP_ENV", "").split(",")):  # experiments only
            env.pop(k, None)
        if os.environ.get("E2E_STRACE") and shutil.which("strace"):  # record every connect(2): direct (non-proxy) traffic shows here
            # E2E_STRACE_TRACE widens what is traced (experiments: "connect,%file,%desc" shows
            # what a confined agent was refused, as EACCES/EROFS lines).
            trace = os.environ.get("E2E_STRACE_TRACE", "connect")
            cmd = ["strace", "-f", "-qq", "-e", "trace=" + trace, "-o", run + "/strace.txt"] + cmd
        with open(run + "/cmd.json", "w") as f:
            json.dump({"cmd": cmd, "cwd": proj, "env": env}, f, indent=2)
        t0 = time.time()
        try:
            p = subprocess.run(cmd, cwd=proj, env=env, stdin=subprocess.DEVNULL,
                               stdout=open(run + "/cli.out", "w"), stderr=open(run + "/cli.err", "w"),
                               timeout=TIMEOUT)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        if serving:  # the plugin goes on judging after `run` returns
            settled(run, spec["verdicts"] if spec else None)
        dur = round(time.time() - t0, 1)
        if watcher:
            watcher.terminate()
            watcher.wait()
    finally:
        srv.terminate()
        srv.wait()
    res = check(cli, scenario, run, proj, rc, dur, spec)
    with open(run + "/result.json", "w") as f:
        json.dump(res, f, indent=2)
    sys.stdout.write(json.dumps(res) + "\n")  # one write: runs finish side by side
    return res


def prepare_tooltime(cli, scenario, proj):
    """A tool-time run's project: seed.txt and the CLI's own settings committed, so the
    file-scope gate compares with a first commit. Claude Code's user settings allow Bash (in -p,
    acceptEdits, `python3 -c …` is otherwise refused as needing an approval no one can give),
    so what refuses a call is validator. For patch_through, Codex's hooks without PreToolUse,
    as if Codex had not asked it (openai/codex#26733, #27833)."""
    if cli == "claude":
        home = os.path.dirname(proj) + "/home/.claude"
        os.makedirs(home, exist_ok=True)
        with open(home + "/settings.json", "w") as f:
            json.dump({"permissions": {"allow": ["Bash"]}}, f, indent=2)
    if scenario == "patch_through":
        path = proj + "/.codex/hooks.json"
        hooks = json.load(open(path))
        del hooks["hooks"]["PreToolUse"]
        with open(path, "w") as f:
            json.dump(hooks, f, indent=2)
    with open(proj + "/seed.txt", "w") as f:
        f.write(TS.SEED)
    git = ["git", "-C", proj, "-c", "user.name=e2e", "-c", "user.email=e2e@validator.invalid"]
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "seed"], check=True)


def start_server(run):
    """The scripted model server for RUN/script.json, logging to RUN/server.jsonl: (process, port)."""
    portf = run + "/port"
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "model_server.py"), "--script", run + "/script.json",
                            "--log", run + "/server.jsonl", "--port-file", portf],
                           stderr=open(run + "/server.err", "w"))
    for _ in range(200):  # the file may be there before its number is written whole
        try:
            return srv, int(open(portf).read())
        except (OSError, ValueError):
            time.sleep(0.05)
    return srv, int(open(portf).read())


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port, seconds=30):
    import socket
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


def settled(run, verdicts=None, seconds=60):
    """Waits until the plugin's last answer ends the session (pass or stop) after at least as
    many stops as VERDICTS, or `seconds`; with no stop to judge (`[]`: broken rules), until the
    plugin says it could not judge one."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if verdicts == []:
            if os.path.exists(run + "/serve.out") and "could not judge this stop" in open(run + "/serve.out").read():
                time.sleep(2)
                return
        else:
            answered = [e for e in events(run) if e.get("event") == "hook_answered"]
            if answered and answered[-1]["details"].get("answer") in ("pass", "stop") and \
                    len(answered) >= len(verdicts or ()):
                time.sleep(2)  # nothing more may follow
                return
        time.sleep(0.2)


def load_log(run):
    out = []
    if os.path.exists(run + "/server.jsonl"):
        for line in open(run + "/server.jsonl"):
            out.append(json.loads(line))
    return out


def events(run):
    p = run + "/rules/.validator/events.jsonl"
    if not os.path.exists(p):
        return []
    return [json.loads(l) for l in open(p) if l.strip()]


def check(cli, scenario, run, proj, rc, dur, spec=None):
    reqs = load_log(run)
    mains = [r for r in reqs if r.get("kind") == "main"]
    ev = events(run)
    answered = [e for e in ev if e.get("event") == "hook_answered"]
    fb_in = [r["turn"] for r in mains
             if FEEDBACK_MARK in json.dumps(r.get("body"), ensure_ascii=False)
             and FEEDBACK_REASON in json.dumps(r.get("body"), ensure_ascii=False)]
    res = {
        "cli": cli, "scenario": scenario, "rc": rc, "seconds": dur,
        "main_requests": len(mains),
        "side_requests": sum(1 for r in reqs if r.get("kind") == "side"),
        "other_paths": sorted({r["method"] + " " + r["path"] for r in reqs if r.get("kind") == "other"}),
        "proxy_attempts": sorted({r["path"] for r in reqs if r.get("kind") == "proxy"}),
        "answer_exists": os.path.exists(proj + "/answer.txt"),
        "feedback_seen_in_main_turns": fb_in,
        "verdicts": ["%s/%s" % (e["details"].get("verdict"), e["details"].get("answer")) for e in answered]
        or [e["details"].get("verdict") for e in ev if e.get("event") == "verdict_written"],
    }
    res["tool_hooks"] = "%d/%d" % (sum(1 for e in ev if e.get("event") == "tool_denied"),
                                   sum(1 for e in ev if e.get("event") == "tool_told"))
    ok = False
    if spec is not None:
        ok = TS.check(cli, scenario, spec, run, proj, rc, mains, ev, res)
    elif scenario in SS.SCENARIOS:
        prompt = next((a for a in json.load(open(run + "/cmd.json"))["cmd"] if "STATUS block" in a), PROMPT)
        ok = SS.check(cli, scenario, run, proj, rc, mains, res, prompt)
    elif scenario == "fail_fix_pass":
        ok = res["answer_exists"] and len(mains) == 3 and fb_in and fb_in[0] == 1 and rc == 0
    elif scenario == "pass":
        ok = res["answer_exists"] and len(mains) == 2 and not fb_in and rc == 0
    elif scenario == "breaker":  # strikes: the same failure 3 times in a row
        ok = (not res["answer_exists"]) and len(mains) == 3 and rc == 0 and \
            res["verdicts"] == ["FAIL/block", "FAIL/block", "ESCALATED/stop"]
    elif scenario == "breaker_attempts":  # max_attempts: 3 -> stop 4 is ESCALATED
        ok = (not res["answer_exists"]) and len(mains) == 4 and rc == 0 and \
            res["verdicts"] == ["FAIL/block"] * 3 + ["ESCALATED/stop"]
    elif scenario == "plugin":  # the feedback sent into the same session, then PASS
        ok = res["answer_exists"] and len(mains) == 3 and fb_in[:1] == [1] and \
            res["verdicts"] == ["FAIL/block", "PASS/pass"]
    elif scenario == "plugin_breaker":  # strikes end it: nothing is sent after ESCALATED
        ok = (not res["answer_exists"]) and len(mains) == 3 and \
            res["verdicts"] == ["FAIL/block", "FAIL/block", "ESCALATED/stop"]
    elif scenario in ("loop", "loop_json"):  # the retry continues the session: the prompt and the feedback in turn 2
        second = json.dumps(mains[1].get("body"), ensure_ascii=False) if len(mains) > 1 else ""
        ok = res["answer_exists"] and rc == 0 and len(mains) == 3 and fb_in[:1] == [1] and \
            PROMPT in second and res["verdicts"] == ["FAIL", "PASS"]
        if scenario == "loop_json":  # what was judged is the CLI's JSON output, by its final message
            done = run + "/staging/proj.done"
            res["done_body_is_json"] = os.path.exists(done) and open(done).read().startswith("{")
            ok = ok and res["done_body_is_json"]
    elif scenario == "loop_breaker":  # max_attempts 3: three runs of the agent, then ESCALATED (4)
        ok = (not res["answer_exists"]) and rc == 4 and len(mains) == 3 and \
            res["verdicts"] == ["FAIL", "FAIL", "FAIL", "ESCALATED"]
    elif scenario == "subagent":  # the subagent's attempts are its own; the parent passes at once
        agents = [e.get("agent") for e in answered]
        ok = res["answer_exists"] and rc == 0 and \
            res["verdicts"] == ["FAIL/block", "PASS/pass", "PASS/pass"] and \
            agents[0] == agents[1] and agents[1] != agents[2]
        res["agents"] = agents
    elif scenario == "status_retry":  # not passed on the STATUS said before the block
        ok = res["answer_exists"] and rc == 0 and \
            res["verdicts"] == ["FAIL/block", "FAIL/block", "PASS/pass"]
    elif scenario == "agent_cap":  # max_attempts 20: Claude Code's own cap (9 blocks) comes first
        limit = 9 if cli == "claude" else 21
        ok = (not res["answer_exists"]) and rc == 0 and \
            res["verdicts"] == ["FAIL/block"] * (limit - 1) + ["ESCALATED/stop"]
    elif scenario == "error":  # never a free stop: held while attempts last, then stopped
        ok = len(mains) == 4 and rc == 0 and \
            res["verdicts"] == ["ERROR/block"] * 3 + ["ERROR/stop"]
    elif scenario == "error_verdict":  # held as a FAIL; the same ERROR 3 times is ESCALATED
        # The first stop's ERROR is held; what follows is held too until the breaker stops it.
        verdicts = res["verdicts"]
        ok = len(mains) == len(verdicts) + 1 and rc == 0 and res["answer_exists"] and \
            verdicts[:1] == ["ERROR/block"] and verdicts[-1:] == ["ESCALATED/stop"] and \
            all(v.endswith("/block") for v in verdicts[:-1])
    res["ok"] = bool(ok)
    if os.path.exists(run + "/strace.txt"):
        import re
        dests = set()
        for line in open(run + "/strace.txt"):
            if "AF_UNIX" in line or "AF_NETLINK" in line:
                continue
            m = re.search(r'sin6?_port=htons\((\d+)\).*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")', line)
            if m:
                dests.add("%s:%s" % (m.group(2) or m.group(3), m.group(1)))
        res["connects"] = sorted(dests)
    # No traffic may leave loopback: nothing proxied, and (under strace) no connect(2) elsewhere.
    # OpenCode 1.18 asks registry.npmjs.org for a package at start, whatever its settings say;
    # the proxy sink refuses it and the run goes on. It is reported, and only it is tolerated.
    tolerated = KNOWN_REFUSED.get(cli, ())
    res["no_leaks"] = all(p in tolerated for p in res["proxy_attempts"]) and \
        all(d.startswith("127.0.0.1:") for d in res.get("connects", []))
    # The rules file's place is the person's to know, never the model's: no request may name
    # it (nor its directory, where validator's state lives), whatever the run.
    log_text = open(run + "/server.jsonl", errors="replace").read() if os.path.exists(run + "/server.jsonl") else ""
    res["rules_path_hidden"] = run + "/rules" not in log_text
    res["ok"] = res["ok"] and res["no_leaks"] and res["rules_path_hidden"]
    return res


def main():
    if not in_netns() and os.environ.get("E2E_NETNS") != "0":
        if netns_available():
            reexec_in_netns()
        print("note: no network namespace here; the runs reach only the scripted server by configuration",
              file=sys.stderr)
        os.environ["E2E_NETNS"] = "0"
    args = sys.argv[1:]
    if args[:1] in (["probe"], ["capture-streams"]):  # tests/agents/probes.py: not part of `all`
        import probes
        sys.exit(probes.main(args[1:] if args[0] == "probe" else args))
    if args[:1] == ["all"]:  # every scenario, or those named, with every CLI that has it
        pairs = [(c, s) for c in ("claude", "codex", "gemini", "opencode") for s in SCENARIOS
                 if c in ONLY.get(s, () if c in HOOKLESS else (c,)) and (s in args[1:] or not args[1:])]
    else:
        pairs = [(args[0], args[1])]
    # AGENTS_JOBS runs at a time (each has its own directories, model server and ports). One
    # by default: two at once on two cores took 6 minutes instead of about 7, and once Codex
    # failed to write a file its own apply_patch was let write.
    jobs = max(1, int(os.environ.get("AGENTS_JOBS", "1")))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda pair: run_one(*pair), pairs))
    summary(results)
    sys.exit(0 if all(r["ok"] for r in results) else 1)


def version(cli):
    try:
        out = subprocess.run([os.path.join(BIN, cli), "--version"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL,
                             env=dict(os.environ, HOME=os.path.join(E2E, "version-home"))).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    words = [w for w in out.split() if w[:1].isdigit()]
    return words[0] if words else out.strip() or "?"


def summary(results):
    """A Markdown table per CLI and version: what was run and what held (also summary.md, in
    $AGENTS_RUNS when it is set, else in $AGENTS_WORK)."""
    lines = ["| agent | version | scenario | held | stops judged (verdict/answer) | tool calls refused/told | model requests | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    versions = {}
    for r in results:
        cli = r["cli"]
        if cli not in versions:
            versions[cli] = version(cli)
        lines.append("| %s | %s | %s | %s | %s | %s | %d | %s |" % (
            cli, versions[cli], r["scenario"], "yes" if r["ok"] else "**no**",
            ", ".join(r["verdicts"]) or "none", r.get("tool_hooks", "0/0"), r["main_requests"], r["seconds"]))
    text = "\n".join(lines) + "\n"
    # Beside the runs when they have a place of their own (the CLIs' directory may be shared).
    where = RUNS if os.environ.get("AGENTS_RUNS") else E2E
    os.makedirs(where, exist_ok=True)
    with open(os.path.join(where, "summary.md"), "w") as f:
        f.write(text)
    sys.stderr.write(text)


if __name__ == "__main__":
    main()
