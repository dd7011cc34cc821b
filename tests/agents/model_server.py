#!/usr/bin/env python3
"""Scripted model server for end-to-end tests of agent CLIs (stdlib only).

Speaks just enough of three wire APIs:
  * Anthropic Messages   POST /v1/messages            (SSE or JSON)   -> Claude Code
  * OpenAI Responses     POST /v1/responses           (SSE)           -> Codex CLI
  * Gemini               POST /v1beta/models/M:streamGenerateContent?alt=sse,
                         :generateContent, :countTokens               -> Gemini CLI
Anything else gets a small JSON answer or 404, and is logged.
It also acts as an HTTP(S) proxy sink: CONNECT/absolute-URI requests are logged as
"proxy" and refused (403), so pointing HTTPS_PROXY at it shows what a CLI would
have sent to the internet.

Script (JSON):
  {"turns": [
      {"text": "Done.\\nSTATUS: OK"},
      {"write": {"path": "/abs/project/answer.txt", "rel": "answer.txt", "content": "42\\n"}},
      {"tool": {"name": "Bash", "input": {"command": "ls"}}},
      {"text": "Writing it now.", "tools": [{"name": "Write", "input": {...}}, ...]},
      {"tool": {"name": "apply_patch", "input": "*** Begin Patch\\n..."}, "usage": {"output": 9}}
   ],
   "after_last": "repeat"}        # "repeat" (default) the last turn, or "text" (say "OK")
A turn is chosen by counting MAIN agent requests (requests that offer the agent's
tools: Write/write, any tool, Gemini's file or shell tools); side requests (titles, summaries, classifiers, quota checks,
token counts) are answered generically and not counted.

A turn's calls ("write", "tool", "tools", in that order) become the API's own tool call, with
the name and input exactly as scripted (the model's side of the wire, so any tool, any input):
  * Anthropic: a tool_use block {"name", "input"} (Claude Code's Write/Edit/Bash/Agent,
    OpenCode's write/edit/bash/task/...);
  * OpenAI Responses: an input that is a string becomes a custom_tool_call (Codex's freeform
    apply_patch), an object a function_call with the object JSON-encoded as its arguments
    (exec_command, shell, ...); "kind": "custom"|"function" forces either;
  * Gemini: a functionCall part {"name", "args": input} (write_file, replace,
    run_shell_command, ...).
"write" picks the file-writing tool the request offers (Write/write, apply_patch, write_file).
A turn's "text" goes before its calls; a turn with neither says "OK".

Token usage: every response reports scripted usage, in the API's own fields. Counted in
one model ("normalized"): input (not cached), cache_read, cache_write, output (visible),
reasoning. A main turn i (0-based) reports input 1000+i, cache_read 200+i, cache_write
30+i (Anthropic only), output 50+i, reasoning 3+i (OpenAI, Gemini only), unless the turn's
"usage" overrides some of them; a side request 7 input, 3 output. On the wire:
  * Anthropic: input_tokens, cache_read_input_tokens, cache_creation_input_tokens,
    output_tokens (message_start carries output_tokens 1, message_delta the final counts, all
    fields, as the API does today);
  * OpenAI: input_tokens (input + cache_read), input_tokens_details.cached_tokens,
    output_tokens (output + reasoning), output_tokens_details.reasoning_tokens, total_tokens;
  * Gemini: promptTokenCount (input + cache_read), cachedContentTokenCount,
    candidatesTokenCount (output), thoughtsTokenCount (reasoning), totalTokenCount.
Each log entry carries {"usage": {"normalized", "wire"}}; --usage-file (default: the log's
path with .usage.json) holds the running totals per kind (main, side) and response count.

Log: one JSON object per request appended to --log (JSONL):
  {"seq", "t", "api", "method", "path", "kind": main|side|other|proxy, "turn", "body", "usage"}

Usage: model_server.py --script S.json --log L.jsonl [--port 0] [--port-file F] [--usage-file U]
"""
import argparse
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOCK = threading.Lock()
STATE = {"seq": 0, "main": 0, "usage": {}}
ARGS = None
SCRIPT = None

USAGE_KEYS = ("input", "cache_read", "cache_write", "output", "reasoning")


def log(entry):
    with LOCK:
        STATE["seq"] += 1
        entry["seq"] = STATE["seq"]
        entry["t"] = round(time.time(), 3)
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
        usage = entry.get("usage")
        if usage:
            totals = STATE["usage"].setdefault(entry["kind"], dict.fromkeys(USAGE_KEYS + ("responses",), 0))
            for k in USAGE_KEYS:
                totals[k] += usage["normalized"].get(k, 0)
            totals["responses"] += 1
            with open(ARGS.usage_file + ".tmp", "w", encoding="utf-8") as f:
                json.dump(STATE["usage"], f, indent=1)
            os.replace(ARGS.usage_file + ".tmp", ARGS.usage_file)


def next_turn():
    """Take the next scripted turn (0-based index is the count of main requests so far)."""
    with LOCK:
        i = STATE["main"]
        STATE["main"] += 1
    turns = SCRIPT["turns"]
    if i < len(turns):
        return i, turns[i]
    if SCRIPT.get("after_last", "repeat") == "repeat":
        return i, turns[-1]
    return i, {"text": "OK"}


def scripted_usage(api, turn, idx):
    """The normalized usage of one response: distinct per main turn, so a count that takes a
    turn twice, or misses one, shows in the totals."""
    if idx is None:  # a side request
        n = {"input": 7, "cache_read": 0, "cache_write": 0, "output": 3, "reasoning": 0}
    else:
        n = {"input": 1000 + idx, "cache_read": 200 + idx, "cache_write": 30 + idx if api == "anthropic" else 0,
             "output": 50 + idx, "reasoning": 0 if api == "anthropic" else 3 + idx}
        n.update({k: v for k, v in (turn.get("usage") or {}).items() if k in USAGE_KEYS})
    return n


def wire_usage(api, n):
    if api == "anthropic":
        return {"input_tokens": n["input"], "cache_creation_input_tokens": n["cache_write"],
                "cache_read_input_tokens": n["cache_read"], "output_tokens": n["output"]}
    if api == "openai":
        inp = n["input"] + n["cache_read"]
        out = n["output"] + n["reasoning"]
        return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": n["cache_read"]},
                "output_tokens": out, "output_tokens_details": {"reasoning_tokens": n["reasoning"]},
                "total_tokens": inp + out}
    prompt = n["input"] + n["cache_read"]
    return {"promptTokenCount": prompt, "cachedContentTokenCount": n["cache_read"],
            "candidatesTokenCount": n["output"], "thoughtsTokenCount": n["reasoning"],
            "totalTokenCount": prompt + n["output"] + n["reasoning"]}


def turn_calls(turn):
    """The scripted tool calls of a turn, in order: its "write", its "tool", its "tools"."""
    calls = [{"write": turn["write"]}] if "write" in turn else []
    if "tool" in turn:
        calls.append(turn["tool"])
    calls.extend(turn.get("tools") or [])
    return calls


def turn_text(turn):
    if "text" in turn:
        return turn["text"]
    return None if turn_calls(turn) else "OK"


def new_id(prefix):
    return prefix + uuid.uuid4().hex[:20]


# ---------------------------------------------------------------- classification

def anthropic_is_main(body):
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    return bool(names & {"Write", "write", "Bash", "bash", "Read", "read"})  # Claude Code's, OpenCode's


def openai_is_main(body):
    return bool(body.get("tools"))


def gemini_is_main(body):
    """The agent's own turns offer its tools; a user's policy may take write_file away."""
    for t in body.get("tools") or []:
        for fd in t.get("functionDeclarations") or []:
            if fd.get("name") in ("write_file", "read_file", "replace", "run_shell_command"):
                return True
    return False


# ---------------------------------------------------------------- helpers

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-model/1"

    def log_message(self, fmt, *a):  # quiet
        if ARGS.verbose:
            sys.stderr.write("[model] " + fmt % a + "\n")

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not n and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        enc = self.headers.get("Content-Encoding", "")
        if enc in ("gzip", "deflate") and raw:
            import zlib
            raw = zlib.decompress(raw, 16 + zlib.MAX_WBITS if enc == "gzip" else zlib.MAX_WBITS)
        elif enc == "zstd" and raw:
            return {"_undecoded_zstd_bytes": len(raw)}
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"_raw": raw[:4000].decode("utf-8", "replace")}

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        out = ""
        if event:
            out += "event: %s\n" % event
        out += "data: %s\n\n" % json.dumps(data)
        self.wfile.write(out.encode())
        self.wfile.flush()

    # ------------------------------------------------------------ proxy sink
    def proxy_sink(self, body=None):
        log({"api": "proxy", "method": self.command, "path": self.path, "kind": "proxy",
             "headers": {k: v for k, v in self.headers.items() if k.lower() in ("host", "user-agent")}})
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.close_connection = True

    def do_CONNECT(self):
        self.proxy_sink()

    # ------------------------------------------------------------ dispatch
    def do_GET(self):
        self.dispatch("GET")

    def do_HEAD(self):
        self.dispatch("HEAD")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def dispatch(self, method):
        if self.path.startswith("http://") or self.path.startswith("https://"):
            return self.proxy_sink()
        body = self.read_body() if method in ("POST", "PUT") else None
        url = urlsplit(self.path)
        path = url.path
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() in ("user-agent", "anthropic-beta", "x-app", "originator", "accept")}
        entry = {"method": method, "path": self.path, "headers": hdrs, "body": body}

        if method == "POST" and path.endswith("/v1/messages/count_tokens"):
            entry.update(api="anthropic", kind="side")
            log(entry)
            return self.send_json({"input_tokens": 100})
        if method == "POST" and path.endswith("/v1/messages"):
            return self.anthropic(entry, body or {})
        if method == "POST" and path.endswith("/responses"):
            return self.openai(entry, body or {})
        if "/models/" in path and ":" in path.rsplit("/", 1)[-1]:
            return self.gemini(entry, body or {}, path)
        if method == "GET" and path.rstrip("/").endswith("/models"):
            entry.update(api="models", kind="other")
            log(entry)
            return self.send_json({"data": [], "models": [], "object": "list", "has_more": False})
        entry.update(api="unknown", kind="other")
        log(entry)
        return self.send_json({"error": {"type": "not_found_error", "message": "scripted server: no such endpoint"}}, 404)

    def turn_for(self, entry, main):
        """The scripted turn for an agent's own request; a side request (titles, summaries,
        classifiers) gets a generic answer and does not use up a turn. Logs the request, with
        the usage its answer reports."""
        if main:
            idx, turn = next_turn()
            entry.update(kind="main", turn=idx)
        else:
            idx, turn = None, {"text": "OK"}
            entry.update(kind="side")
        n = scripted_usage(entry["api"], turn, idx)
        entry["usage"] = {"normalized": n, "wire": wire_usage(entry["api"], n)}
        log(entry)
        return turn

    # ------------------------------------------------------------ Anthropic
    def anthropic(self, entry, body):
        entry["api"] = "anthropic"
        turn = self.turn_for(entry, anthropic_is_main(body))
        usage = entry["usage"]["wire"]
        model = body.get("model", "claude-scripted")
        names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        blocks = []
        if turn_text(turn) is not None:
            blocks.append({"type": "text", "text": turn_text(turn)})
        for call in turn_calls(turn):
            if "write" in call:
                w = call["write"]
                if "Write" in names:
                    call = {"name": "Write", "input": {"file_path": w["path"], "content": w["content"]}}
                else:  # OpenCode
                    call = {"name": "write", "input": {"filePath": w["path"], "content": w["content"]}}
            blocks.append({"type": "tool_use", "id": new_id("toolu_"), "name": call["name"], "input": call["input"]})
        stop = "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn"
        msg_id = new_id("msg_")
        if not body.get("stream"):
            return self.send_json({"id": msg_id, "type": "message", "role": "assistant", "model": model,
                                   "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.start_sse()
        self.sse({"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}}, "message_start")
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                self.sse({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}, "content_block_start")
                self.sse({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}}, "content_block_delta")
            else:
                self.sse({"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}, "content_block_start")
                js = json.dumps(b["input"])
                half = len(js) // 2
                for part in (js[:half], js[half:]):
                    self.sse({"type": "content_block_delta", "index": i,
                              "delta": {"type": "input_json_delta", "partial_json": part}}, "content_block_delta")
            self.sse({"type": "content_block_stop", "index": i}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": usage}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")

    # ------------------------------------------------------------ OpenAI Responses
    def openai(self, entry, body):
        entry["api"] = "openai"
        turn = self.turn_for(entry, openai_is_main(body))
        tool_names = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
        resp_id = new_id("resp_")
        model = body.get("model", "gpt-scripted")
        items = []
        if turn_text(turn) is not None:
            items.append({"type": "message", "id": new_id("msg_"), "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": turn_text(turn), "annotations": []}]})
        for call in turn_calls(turn):
            if "write" in call:
                items.append(self.codex_write_item(call["write"], tool_names))
            else:
                items.append(openai_call_item(call))
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "in_progress", "output": []}
        self.start_sse()
        seq = iter(range(100000))
        self.sse({"type": "response.created", "sequence_number": next(seq), "response": base}, "response.created")
        self.sse({"type": "response.in_progress", "sequence_number": next(seq), "response": base}, "response.in_progress")
        for index, item in enumerate(items):
            self.openai_item(item, index, seq)
        done = dict(base, status="completed", output=items, usage=entry["usage"]["wire"])
        self.sse({"type": "response.completed", "sequence_number": next(seq), "response": done}, "response.completed")

    def openai_item(self, item, index, seq):
        added = dict(item, status="in_progress")
        if item["type"] == "message":
            added["content"] = []
        self.sse({"type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                  "item": added}, "response.output_item.added")
        if item["type"] == "message":
            text = item["content"][0]["text"]
            common = {"item_id": item["id"], "output_index": index, "content_index": 0}
            self.sse(dict(common, type="response.content_part.added", sequence_number=next(seq),
                          part={"type": "output_text", "text": "", "annotations": []}), "response.content_part.added")
            self.sse(dict(common, type="response.output_text.delta", sequence_number=next(seq), delta=text),
                     "response.output_text.delta")
            self.sse(dict(common, type="response.output_text.done", sequence_number=next(seq), text=text),
                     "response.output_text.done")
            self.sse(dict(common, type="response.content_part.done", sequence_number=next(seq),
                          part=item["content"][0]), "response.content_part.done")
        self.sse({"type": "response.output_item.done", "sequence_number": next(seq), "output_index": index,
                  "item": item}, "response.output_item.done")

    def codex_write_item(self, w, tools):
        """Write a file with whatever tool Codex offered: apply_patch (custom/freeform or
        function), else exec_command / shell."""
        rel = w.get("rel") or w["path"]
        lines = "".join("+" + l + "\n" for l in w["content"].splitlines())
        patch = "*** Begin Patch\n*** Add File: %s\n%s*** End Patch\n" % (rel, lines)
        ap = tools.get("apply_patch")
        if ap is not None and ap.get("type") == "custom":
            return openai_call_item({"name": "apply_patch", "input": patch})
        if ap is not None:
            return openai_call_item({"name": "apply_patch", "input": {"input": patch}})
        script = "printf '%%s' %s > %s" % (sh_quote(w["content"]), sh_quote(w["path"]))
        if "exec_command" in tools:
            return openai_call_item({"name": "exec_command", "input": {"cmd": script}})
        return openai_call_item({"name": "shell", "input": {"command": ["bash", "-lc", script]}})

    # ------------------------------------------------------------ Gemini
    def gemini(self, entry, body, path):
        entry["api"] = "gemini"
        model, _, method = path.rsplit("/", 1)[-1].partition(":")
        if method == "countTokens":
            entry["kind"] = "side"
            log(entry)
            return self.send_json({"totalTokens": 100})
        if method == "embedContent" or method == "batchEmbedContents":
            entry["kind"] = "side"
            log(entry)
            return self.send_json({"embedding": {"values": [0.0] * 8}})
        gc = body.get("generationConfig") or body.get("config") or {}
        turn = self.turn_for(entry, gemini_is_main(body))
        if entry["kind"] == "side":
            parts = [{"text": gemini_side_text(gc)}]
        else:
            parts = []
            if turn_text(turn) is not None:
                parts.append({"text": turn_text(turn)})
            for call in turn_calls(turn):
                if "write" in call:
                    w = call["write"]
                    call = {"name": "write_file", "input": {"file_path": w["path"], "content": w["content"]}}
                parts.append({"functionCall": {"name": call["name"], "args": call["input"]}})
        resp = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": entry["usage"]["wire"], "modelVersion": model}
        if method == "streamGenerateContent":
            self.start_sse()
            self.sse(resp)
        else:
            self.send_json(resp)


def openai_call_item(call):
    """A scripted call as a Responses output item: a string input is a freeform custom tool's
    (Codex's apply_patch), an object a function's JSON arguments; "kind" forces either."""
    kind = call.get("kind") or ("custom" if isinstance(call["input"], str) else "function")
    if kind == "custom":
        return {"type": "custom_tool_call", "id": new_id("ctc_"), "status": "completed",
                "call_id": new_id("call_"), "name": call["name"], "input": call["input"]}
    args = call["input"] if isinstance(call["input"], str) else json.dumps(call["input"])
    return {"type": "function_call", "id": new_id("fc_"), "status": "completed",
            "call_id": new_id("call_"), "name": call["name"], "arguments": args}


def gemini_side_text(gc):
    """Answer a side request (next-speaker check, model router, loop check...) with JSON that
    fits its schema if it asks for JSON, else plain text."""
    schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
    if not schema and gc.get("responseMimeType") != "application/json":
        return "OK"
    return json.dumps(fill_schema(schema or {}))


def fill_schema(s):
    t = (s.get("type") or "").lower()
    props = s.get("properties")
    if props or t == "object":
        out = {}
        for k, v in (props or {}).items():
            if k == "next_speaker":
                out[k] = "user"
            elif k == "model_choice":
                out[k] = "flash"
            elif k in ("complexity_score",):
                out[k] = 1
            else:
                out[k] = fill_schema(v)
        return out
    if s.get("enum"):
        return s["enum"][0]
    if t == "array":
        return []
    if t in ("integer", "number"):
        return 0
    if t == "boolean":
        return False
    return "ok"


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    global ARGS, SCRIPT
    p = argparse.ArgumentParser()
    p.add_argument("--script", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--usage-file")
    p.add_argument("--verbose", action="store_true")
    ARGS = p.parse_args()
    if not ARGS.usage_file:
        ARGS.usage_file = ARGS.log.rsplit(".", 1)[0] + ".usage.json"
    with open(ARGS.script, encoding="utf-8") as f:
        SCRIPT = json.load(f)
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    sys.stderr.write("scripted model server on 127.0.0.1:%d\n" % port)
    srv.serve_forever()


if __name__ == "__main__":
    main()
