"""A fake Anthropic Messages API on 127.0.0.1 for the real agents (Claude Code, pi) to resume against.

It checks each request as the real API would (messages_problem below) and
answers 400 with the API's error shape when one is wrong; otherwise a short
reply, streamed as server-sent events when the request asks for a stream (both
agents do) in the order their SDKs read them: message_start,
content_block_start, content_block_delta, content_block_stop, message_delta,
message_stop. Every request is recorded with its status: what the agent loaded
is what it sent.

    with AgentAPI() as api:
        ... ANTHROPIC_BASE_URL=api.base_url ...
        api.requests        # [Request(path, body, status, problem)]
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Resumed."


@dataclass
class Request:
    path: str
    body: Any
    status: int
    problem: str | None = None

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _turns(messages: list[dict]) -> list[tuple[str, list[dict], int]]:
    """Consecutive messages of one role combined, as the API combines them: (role, blocks, first index)."""
    turns: list[tuple[str, list[dict], int]] = []
    for index, message in enumerate(messages):
        if message.get("role") == "system":      # newer clients add system notes between turns
            continue
        blocks = _blocks(message.get("content"))
        if turns and turns[-1][0] == message.get("role"):
            turns[-1][1].extend(blocks)
        else:
            turns.append((message.get("role"), list(blocks), index))
    return turns


def _content_problem(index: int, message: Any, last: bool) -> str | None:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
        return f"messages.{index}: role must be 'user', 'assistant' or 'system'"
    content = message.get("content")
    if isinstance(content, str):
        if not content and not (last and message["role"] == "assistant"):
            return f"messages.{index}: content must be non-empty"
        return None
    if not isinstance(content, list) or (not content and not (last and message["role"] == "assistant")):
        return f"messages.{index}: all messages must have non-empty content except for the optional final " \
               "assistant message"
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and not block.get("text"):
            return f"messages.{index}.content.{j}.text: text content blocks must be non-empty"
        if kind == "thinking" and not block.get("signature"):
            return f"messages.{index}.content.{j}.thinking.signature: Field required"
        if kind in ("tool_use", "thinking", "redacted_thinking") and message["role"] != "assistant":
            return f"messages.{index}.content.{j}: {kind} blocks are only allowed in assistant messages"
        if kind == "tool_result" and message["role"] != "user":
            return f"messages.{index}.content.{j}: tool_result blocks are only allowed in user messages"
    return None


def messages_problem(messages: Any) -> str | None:
    """What the real API would refuse in this message list, or None (tool pairing, roles, first turn)."""
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        problem = _content_problem(index, message, index == len(messages) - 1)
        if problem:
            return problem
    turns = _turns(messages)
    if turns[0][0] != "user":
        return "messages: the first message must use the user role"
    seen_ids: set[str] = set()
    for k, (role, blocks, index) in enumerate(turns):
        if role == "assistant":
            calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            for call in calls:
                if call in seen_ids:
                    return f"messages.{index}: `tool_use` ids must be unique ({call})"
                seen_ids.add(call)
            if not calls or k == len(turns) - 1:
                continue
            answered = {b.get("tool_use_id") for b in turns[k + 1][1] if b.get("type") == "tool_result"}
            missing = [c for c in calls if c not in answered]
            if missing:
                return (f"messages.{turns[k + 1][2]}: `tool_use` ids were found without `tool_result` blocks "
                        f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                        "corresponding `tool_result` block in the next message.")
        else:
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            previous = {b["id"] for b in turns[k - 1][1] if b.get("type") == "tool_use"} if k else set()
            stray = [r for r in results if r not in previous]
            if stray:
                return (f"messages.{index}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{stray[0]}. Each `tool_result` block must have a corresponding `tool_use` block "
                        "in the previous message.")
    return None


def _events(model: str) -> list[tuple[str, dict]]:
    usage = {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    return [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_fake_resume", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": REPLY}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:   # noqa: A002 - quiet
        pass

    def do_GET(self) -> None:   # noqa: N802
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}, None)

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": 100}, Request(self.path, body, 200))
            return
        if not path.endswith("/messages"):
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}},
                       Request(self.path, body, 404, "unknown route"))
            return
        problem = "body is not JSON" if body is None else messages_problem(body.get("messages"))
        if problem:
            self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": problem}},
                       Request(self.path, body, 400, problem))
            return
        model = str(body.get("model", "fake"))
        self.server.api.record(Request(self.path, body, 200))          # type: ignore[attr-defined]
        if not body.get("stream"):
            content = [{"type": "text", "text": REPLY}]
            self._json(200, {"id": "msg_fake_resume", "type": "message", "role": "assistant", "model": model,
                             "content": content, "stop_reason": "end_turn", "stop_sequence": None,
                             "usage": {"input_tokens": 10, "output_tokens": 2}}, None)
            return
        payload = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in _events(model))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", "req_fake_resume")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, data: dict, request: Request | None) -> None:
        if request is not None:
            self.server.api.record(request)                            # type: ignore[attr-defined]
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("request-id", "req_fake_resume")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class AgentAPI:
    """The server, in a thread of this process, on a free port of 127.0.0.1."""

    def __init__(self):
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.api = self                                        # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def __enter__(self) -> "AgentAPI":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
