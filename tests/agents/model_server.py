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
      {"write": {"path": "/abs/project/answer.txt", "content": "42\\n"}},
      {"text": "Wrote answer.txt.\\nSTATUS: OK"},
      {"tool": {"name": "Agent", "input": {...}}}      (Anthropic only: any tool call)
   ],
   "after_last": "repeat"}        # "repeat" (default) the last turn, or "text" (say "OK")
A turn is chosen by counting MAIN agent requests (requests that offer the agent's
file-writing tool); side requests (titles, summaries, classifiers, quota checks,
token counts) are answered generically and not counted.

Log: one JSON object per request appended to --log (JSONL):
  {"seq", "t", "api", "method", "path", "kind": main|side|other|proxy, "turn", "body"}

Usage: model_server.py --script S.json --log L.jsonl [--port 0] [--port-file F]
"""
import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOCK = threading.Lock()
STATE = {"seq": 0, "main": 0}
ARGS = None
SCRIPT = None

WRITE_TOOLS = {"anthropic": "Write", "gemini": "write_file"}


def log(entry):
    with LOCK:
        STATE["seq"] += 1
        entry["seq"] = STATE["seq"]
        entry["t"] = round(time.time(), 3)
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


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


# ---------------------------------------------------------------- classification

def anthropic_is_main(body):
    names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    return "Write" in names or "write" in names  # Claude Code's, OpenCode's


def openai_is_main(body):
    return bool(body.get("tools"))


def gemini_is_main(body):
    for t in body.get("tools") or []:
        for fd in t.get("functionDeclarations") or []:
            if fd.get("name") == "write_file":
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
        classifiers) gets a generic answer and does not use up a turn. Logs the request."""
        if main:
            idx, turn = next_turn()
            entry.update(kind="main", turn=idx)
        else:
            turn = {"text": "OK"}
            entry.update(kind="side")
        log(entry)
        return turn

    # ------------------------------------------------------------ Anthropic
    def anthropic(self, entry, body):
        entry["api"] = "anthropic"
        turn = self.turn_for(entry, anthropic_is_main(body))
        model = body.get("model", "claude-scripted")
        blocks = []
        if "write" in turn:
            w = turn["write"]
            names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            if "Write" in names:
                call = {"name": "Write", "input": {"file_path": w["path"], "content": w["content"]}}
            else:  # OpenCode
                call = {"name": "write", "input": {"filePath": w["path"], "content": w["content"]}}
            blocks.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], **call})
            stop = "tool_use"
        elif "tool" in turn:  # any other tool call, e.g. Claude Code's Agent (a subagent)
            blocks.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20],
                           "name": turn["tool"]["name"], "input": turn["tool"]["input"]})
            stop = "tool_use"
        else:
            blocks.append({"type": "text", "text": turn["text"]})
            stop = "end_turn"
        msg_id = "msg_" + uuid.uuid4().hex[:20]
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
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
                  "usage": {"output_tokens": 5}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")

    # ------------------------------------------------------------ OpenAI Responses
    def openai(self, entry, body):
        entry["api"] = "openai"
        turn = self.turn_for(entry, openai_is_main(body))
        tool_names = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
        resp_id = "resp_" + uuid.uuid4().hex[:20]
        model = body.get("model", "gpt-scripted")
        if "write" in turn:
            item = self.codex_write_item(turn["write"], tool_names)
        else:
            item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:16], "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": turn["text"], "annotations": []}]}
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "in_progress", "output": []}
        self.start_sse()
        seq = iter(range(1000))
        self.sse({"type": "response.created", "sequence_number": next(seq), "response": base}, "response.created")
        self.sse({"type": "response.in_progress", "sequence_number": next(seq), "response": base}, "response.in_progress")
        added = dict(item, status="in_progress")
        if item["type"] == "message":
            added["content"] = []
        self.sse({"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0, "item": added},
                 "response.output_item.added")
        if item["type"] == "message":
            text = item["content"][0]["text"]
            self.sse({"type": "response.content_part.added", "sequence_number": next(seq), "item_id": item["id"],
                      "output_index": 0, "content_index": 0,
                      "part": {"type": "output_text", "text": "", "annotations": []}}, "response.content_part.added")
            self.sse({"type": "response.output_text.delta", "sequence_number": next(seq), "item_id": item["id"],
                      "output_index": 0, "content_index": 0, "delta": text}, "response.output_text.delta")
            self.sse({"type": "response.output_text.done", "sequence_number": next(seq), "item_id": item["id"],
                      "output_index": 0, "content_index": 0, "text": text}, "response.output_text.done")
            self.sse({"type": "response.content_part.done", "sequence_number": next(seq), "item_id": item["id"],
                      "output_index": 0, "content_index": 0, "part": item["content"][0]}, "response.content_part.done")
        self.sse({"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0, "item": item},
                 "response.output_item.done")
        done = dict(base, status="completed", output=[item],
                    usage={"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                           "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15})
        self.sse({"type": "response.completed", "sequence_number": next(seq), "response": done}, "response.completed")

    def codex_write_item(self, w, tools):
        """Write a file with whatever tool Codex offered: apply_patch (custom/freeform or
        function), else exec_command / shell."""
        call_id = "call_" + uuid.uuid4().hex[:16]
        rel = w.get("rel") or w["path"]
        lines = "".join("+" + l + "\n" for l in w["content"].splitlines())
        patch = "*** Begin Patch\n*** Add File: %s\n%s*** End Patch\n" % (rel, lines)
        ap = tools.get("apply_patch")
        if ap is not None and ap.get("type") == "custom":
            return {"type": "custom_tool_call", "id": "ctc_" + uuid.uuid4().hex[:16], "status": "completed",
                    "call_id": call_id, "name": "apply_patch", "input": patch}
        if ap is not None:
            return {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:16], "status": "completed",
                    "call_id": call_id, "name": "apply_patch", "arguments": json.dumps({"input": patch})}
        script = "printf '%%s' %s > %s" % (sh_quote(w["content"]), sh_quote(w["path"]))
        if "exec_command" in tools:
            args = {"cmd": script}
            name = "exec_command"
        else:
            args = {"command": ["bash", "-lc", script]}
            name = "shell"
        return {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:16], "status": "completed",
                "call_id": call_id, "name": name, "arguments": json.dumps(args)}

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
        elif "write" in turn:
            w = turn["write"]
            parts = [{"functionCall": {"name": "write_file",
                                       "args": {"file_path": w["path"], "content": w["content"]}}}]
        else:
            parts = [{"text": turn["text"]}]
        resp = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                "modelVersion": model}
        if method == "streamGenerateContent":
            self.start_sse()
            self.sse(resp)
        else:
            self.send_json(resp)


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
    p.add_argument("--verbose", action="store_true")
    ARGS = p.parse_args()
    with open(ARGS.script, encoding="utf-8") as f:
        SCRIPT = json.load(f)
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    sys.stderr.write("scripted model server on 127.0.0.1:%d\n" % port)
    srv.serve_forever()


if __name__ == "__main__":
    main()
