"""A fake Anthropic Messages API for the real agents (Claude Code, pi) to resume against: routes on the
fakes' one server (http_server.py).

It checks each request as the real API would (messages_problem below) and
answers 400 with the API's error shape when one is wrong; otherwise a short
reply, streamed as server-sent events when the request asks for a stream (both
agents do) in the order their SDKs read them: message_start,
content_block_start, content_block_delta, content_block_stop, message_delta,
message_stop. Every request is recorded with its status: what the agent loaded
is what it sent.

    with AgentAPI() as api:
        ... ANTHROPIC_BASE_URL=api.base_url ...
        api.requests        # [Request]: body, status, problem (why it was refused)
"""
from __future__ import annotations

from typing import Any

from hermes_pipeline.testing.http_server import (
    ANY_PATH,
    LoopbackServer,
    Reply,
    Request,
    Route,
    ServedFake,
    json_reply,
    sse_reply,
)

REPLY = "Resumed."
HEADERS = {"request-id": "req_fake_resume"}


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


def _error(status: int, kind: str, message: str) -> Reply:
    return json_reply(status, {"type": "error", "error": {"type": kind, "message": message}}, HEADERS)


class AgentAPI(ServedFake):
    """The server, in a thread of this process, on a free port of 127.0.0.1."""

    def __init__(self):
        self.server = LoopbackServer([
            Route("POST", "/v1/messages/count_tokens", lambda request: json_reply(200, {"input_tokens": 100}, HEADERS)),
            Route("POST", "/v1/messages", self._messages),
            Route("HEAD", ANY_PATH, lambda request: Reply(200)),     # a client's look whether the API is there
        ], fallback=self._not_found)

    @property
    def requests(self) -> list[Request]:
        """The calls the agent made (POSTs), in order."""
        return [r for r in self.server.requests if r.method == "POST"]

    def clear(self) -> None:
        self.server.clear()

    @staticmethod
    def _not_found(request: Request) -> Reply:
        request.problem = "unknown route"
        return _error(404, "not_found_error", request.path)

    @staticmethod
    def _messages(request: Request) -> Reply:
        body = request.body
        request.problem = "body is not JSON" if body is None else messages_problem(body.get("messages"))
        if request.problem:
            return _error(400, "invalid_request_error", request.problem)
        model = str(body.get("model", "fake"))
        if body.get("stream"):
            return sse_reply(_events(model), HEADERS)
        return json_reply(200, {"id": "msg_fake_resume", "type": "message", "role": "assistant", "model": model,
                                "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn",
                                "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2}}, HEADERS)
