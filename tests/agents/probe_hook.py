#!/usr/bin/env python3
"""A hook that records what an agent CLI sends its hooks and answers as configured (stdlib only).

  probe_hook.py --config CONFIG.json EVENT

EVENT is the name the CLI's settings file wires this command to (PreToolUse, BeforeTool,
tool.execute.before, ...): the CLI's own `hook_event_name`, when it sends one, is logged too,
so a hook wired to one event and called for another shows. The command line is deliberately
distinctive (the config path names the run), so a test can grep the model's requests for it.

CONFIG (JSON), read on every call so a test may change it between calls:
  {"log": "/abs/probe.jsonl",
   "answers": {
      "PreToolUse": [                          first rule that applies answers; none: exit 0, no output
        {"when": "answer.txt",                 substring(s) of the raw stdin, all must occur (optional)
         "nth": [1, 2],                        only this event's Nth calls, 1-based (optional)
         "stdout": {"decision": "deny"},       an object is written as JSON, a string as it is
         "stderr": "text", "exit": 0,          exit code (default 0)
         "sleep": 0}],                         seconds to wait before answering (a timeout test)
      "*": [...]}}                             for any event without rules of its own

Log: one JSON line per call, appended: {"event", "n", "t", "pid", "cwd", "argv", "env" (the
variables whose names start with CLAUDE, CODEX, GEMINI or OPENCODE, plus PWD), "input" (stdin
parsed as JSON, else {"_raw": text}), "answer" (the rule applied, or null), "transcript" (what
the session file the input names held about token usage at the moment of the call: its last
usage records, so a test sees whether a hook can count the call it is asked about)}. The line
is written before the answer (and before any sleep), so a hook the CLI kills is still logged.
"""
import fcntl
import json
import os
import sys
import time

ENV_PREFIXES = ("CLAUDE", "CODEX", "GEMINI", "OPENCODE")


def main():
    args = sys.argv[1:]
    if len(args) != 3 or args[0] != "--config":
        sys.stderr.write("usage: probe_hook.py --config CONFIG.json EVENT\n")
        return 1
    config_path, event = args[1], args[2]
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    raw = sys.stdin.buffer.read().decode("utf-8", "replace")
    try:
        data = json.loads(raw) if raw.strip() else None
    except ValueError:
        data = {"_raw": raw}
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k == "PWD"}
    with open(config["log"], "a+", encoding="utf-8") as log:
        fcntl.flock(log, fcntl.LOCK_EX)  # parallel tool calls run hooks at once: count them in order
        log.seek(0)
        n = 1 + sum(1 for line in log if line.strip() and json.loads(line).get("event") == event)
        rule = pick(config.get("answers") or {}, event, n, raw)
        entry = {"event": event, "n": n, "t": round(time.time(), 3), "pid": os.getpid(),
                 "cwd": os.getcwd(), "argv": sys.argv, "env": env, "input": data, "answer": rule,
                 "transcript": usage_records(data)}
        log.write(json.dumps(entry) + "\n")
    if rule is None:
        return 0
    time.sleep(rule.get("sleep", 0))
    out = rule.get("stdout")
    if out is not None:
        sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
        sys.stdout.flush()
    if rule.get("stderr"):
        sys.stderr.write(rule["stderr"])
        sys.stderr.flush()
    return int(rule.get("exit", 0))


USAGE_KEYS = ("usage", "tokens", "total_token_usage", "last_token_usage")


def usage_records(data, keep=8):
    """The last KEEP lines of the input's transcript_path that carry token usage: each as
    {"line": its number, "id": the message id, "type", key: usage object}. Reads at most the
    file's last 8 MiB; a transcript that is one JSON document is taken whole."""
    path = data.get("transcript_path") if isinstance(data, dict) else None
    if not isinstance(path, str) or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (8 << 20)))
        text = f.read().decode("utf-8", "replace")
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        found = {}
        find_usage(obj, found, 0)
        if found:
            msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
            payload = obj.get("payload") if isinstance(obj.get("payload"), dict) else {}
            found.update(line=number, id=msg.get("id") or obj.get("id"),
                         type=obj.get("type"), subtype=payload.get("type"))
            out.append(found)
    return {"path": path, "records": out[-keep:], "lines": len(text.splitlines())}


def find_usage(obj, found, depth):
    if depth > 4 or not isinstance(obj, (dict, list)):
        return
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for k, v in items:
        if k in USAGE_KEYS and isinstance(v, dict):
            found[k] = v
        else:
            find_usage(v, found, depth + 1)


def pick(answers, event, n, raw):
    rules = answers.get(event, answers.get("*", []))
    if isinstance(rules, dict):
        rules = [rules]
    for rule in rules:
        when = rule.get("when", [])
        if isinstance(when, str):
            when = [when]
        nth = rule.get("nth")
        if all(w in raw for w in when) and (nth is None or n in nth):
            return rule
    return None


if __name__ == "__main__":
    sys.exit(main())
