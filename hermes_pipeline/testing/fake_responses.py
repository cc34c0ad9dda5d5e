"""A fake OpenAI Responses API scripted like a coding agent's model, for the real Codex CLI: routes on the
fakes' one server (http_server.py).

Codex is pointed at it through its config.toml (testkit/codex_cli.py writes
one: a custom model provider, or the built-in `openai` one with
`openai_base_url`). Each request is answered from its own input, so a session is
reproducible:

- a compaction request (its last user message is Codex's compaction prompt) gets a
  summary message;
- otherwise, while the current user turn has had fewer than `calls_per_turn` tool
  results, a reasoning item and one call: a shell command (`exec_command`,
  `shell_command` or `shell`, whichever the request offers) or, every fifth
  call when offered, an `apply_patch` custom tool call;
- then a closing assistant message.

Replies stream as server-sent events (`response.output_item.done` per item, then
`response.completed` with usage). The usage is counted from the request as a
model would see it (cl100k tokens of the instructions, the tool schemas and each
item's text), so the rollout's token_count events say what the history held.
The API is served over HTTP only: Codex's built-in provider first asks for a
WebSocket, and is told 426 (it then uses HTTP at once).
"""
from __future__ import annotations

import hashlib
import itertools
import json

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
from hermes_pipeline.tokens import TokenCounter

COMPACTION_MARKERS = ("CONTEXT CHECKPOINT COMPACTION", "handoff summary", "summarize the conversation")
SHELL_TOOLS = ("exec_command", "shell_command", "shell")

DEFAULT_COMMANDS = (
    "seq 1 {size} | sed 's/^/line /'",
    "printf 'alpha\\nbeta\\ngamma\\n' > notes.txt && cat notes.txt",
    "ls -la",
    "python3 -c \"print('\\\\n'.join(f'row {{i}}: ' + 'x' * 40 for i in range({size} // 4)))\"",
    "wc -l notes.txt",
    "grep -n beta notes.txt || true",
)
PATCH = "*** Begin Patch\n*** Add File: {name}\n{lines}\n*** End Patch\n"


def _text_of(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def _is_user_turn(item: dict) -> bool:
    """A message the user typed (not Codex's environment or instructions blocks)."""
    if item.get("type") != "message" or item.get("role") != "user":
        return False
    text = _text_of(item).lstrip()
    return not text.startswith(("<environment_context>", "<user_instructions>", "# AGENTS.md", "<skills"))


def _is_summary(item: dict) -> bool:
    return _text_of(item).lstrip().startswith(("Another language model started", "[CONTEXT COMPACTION]"))


class FakeResponses(ServedFake):
    """The fake; `requests` holds the body of every request it answered (its JSON requests), in order.

    `output_size` scales what the scripted commands print (the history grows by
    about that many lines a call); with `patches`, every fifth call is an
    `apply_patch` (a custom tool call) when the request offers that tool.
    """

    def __init__(self, calls_per_turn: int = 3, commands: tuple[str, ...] = DEFAULT_COMMANDS,
                 output_size: int = 400, patches: bool = True, summary_words: int = 150):
        self.calls_per_turn, self.commands, self.output_size = calls_per_turn, commands, output_size
        self.patches, self.summary_words = patches, summary_words
        self.counter = TokenCounter()
        self._numbers = itertools.count(1)
        self.server = LoopbackServer([Route("GET", ANY_PATH, self._get), Route("POST", ANY_PATH, self._respond)],
                                     on_arrival=self._number)

    @property
    def base_url(self) -> str:
        return self.server.base_url + "/v1"

    @property
    def requests(self) -> list[dict]:
        """The body of every request the fake answered, in order."""
        return [r.body for r in self.server.requests if "number" in r.notes]

    # -- requests ----------------------------------------------------------------

    def _number(self, request: Request) -> None:
        """Each request's number, given as it arrives: the replies are made of it."""
        if request.method == "POST" and request.body is not None:
            request.notes["number"] = next(self._numbers)

    @staticmethod
    def _get(request: Request) -> Reply:
        if request.headers.get("upgrade", "").lower() == "websocket":
            request.problem = "WebSocket asked for; this fake speaks HTTP"
            return json_reply(426, {"error": {"message": "WebSocket is not served here: use HTTP"}})
        return json_reply(200, {"object": "list", "data": [], "models": []})     # model listings: none to offer

    def _respond(self, request: Request) -> Reply:
        if "number" not in request.notes:
            return json_reply(400, {"error": {"message": "not JSON"}})
        body, number = request.body, request.notes["number"]
        items = self.reply(body, number)
        usage = self.usage(body, items)
        events = [("response.created", {"type": "response.created", "response": {"id": f"resp_{number}"}})]
        events += [("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                   "item": item}) for i, item in enumerate(items)]
        events.append(("response.completed", {"type": "response.completed",
                                               "response": {"id": f"resp_{number}", "usage": usage}}))
        return sse_reply(events)

    # -- what the "model" says -----------------------------------------------------

    def reply(self, body: dict, number: int) -> list[dict]:
        items = body.get("input") if isinstance(body.get("input"), list) else []
        last_user = max((i for i, item in enumerate(items) if _is_user_turn(item) and not _is_summary(item)),
                        default=-1)
        prompt = _text_of(items[last_user]) if last_user >= 0 else ""
        if "CONTEXT CHECKPOINT COMPACTION" in prompt:
            return [self._message(number, self._summary(items[:last_user]))]
        results = sum(1 for item in items[last_user + 1:] if item.get("type", "").endswith("call_output"))
        tools = {t.get("name") for t in body.get("tools") or ()}
        shell = next((name for name in SHELL_TOOLS if name in tools), None)
        if shell is None or results >= self.calls_per_turn:
            return [self._message(number, f"Step {number} done: ran {results} command(s) for '{prompt[:60]}'.")]
        step = number + results
        if self.patches and "apply_patch" in tools and step % 5 == 2:
            lines = "\n".join(f"+note {step}.{i}: " + "y" * 30 for i in range(self.output_size // 20))
            call = {"type": "custom_tool_call", "id": f"ctc_{number}", "call_id": f"call_{number}_{results}",
                    "name": "apply_patch", "input": PATCH.format(name=f"notes_{step}.md", lines=lines)}
            what = f"notes_{step}.md"
        else:
            command = self.commands[step % len(self.commands)].format(size=self.output_size)
            arguments = {"exec_command": {"cmd": command}, "shell_command": {"command": command},
                         "shell": {"command": ["bash", "-lc", command]}}[shell]
            call = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}_{results}",
                    "name": shell, "arguments": json.dumps(arguments)}
            what = f"`{command}`"
        reasoning = {"type": "reasoning", "id": f"rs_{number}",
                     "summary": [{"type": "summary_text", "text": f"**Checking** step {results + 1}: {what}"}],
                     "encrypted_content": hashlib.sha256(f"{number}:{what}".encode()).hexdigest() * 4}
        return [reasoning, call]

    def _summary(self, items: list[dict]) -> str:
        asks = [_text_of(item)[:200] for item in items if _is_user_turn(item) and not _is_summary(item)]
        calls = [(item.get("arguments") or item.get("input") or "")[:100] for item in items
                 if item.get("type") in ("function_call", "custom_tool_call")]
        lines = ["Handoff summary.", "User asked:", *(f"- {a}" for a in asks[-6:]),
                 "Calls made:", *(f"- {c}" for c in calls[-8:])]
        return "\n".join(lines)[: self.summary_words * 8]

    @staticmethod
    def _message(number: int, text: str) -> dict:
        return {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    def usage(self, body: dict, items: list[dict]) -> dict:
        """Tokens as a model would see them: instructions, tool schemas and the items' text (not their JSON)."""
        texts = [body.get("instructions") or "", json.dumps(body.get("tools") or [])]
        texts += [_item_text(item) for item in body.get("input") or ()]
        input_tokens = sum(map(self.counter.count_text, texts)) + ITEM_OVERHEAD * len(body.get("input") or ())
        output_tokens = sum(self.counter.count_text(_item_text(item)) + ITEM_OVERHEAD for item in items)
        return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens}


ITEM_OVERHEAD = 4     # tokens a model's template adds around each item


def _item_text(item: dict) -> str:
    """What of an item a model reads: text, a call's name and arguments, an output, a reasoning summary."""
    kind = item.get("type")
    if kind == "message":
        return _text_of(item)
    if kind == "reasoning":
        return "\n".join(p.get("text", "") for p in item.get("summary") or ())
    parts = [item.get(key) for key in ("name", "arguments", "input", "output")]
    return "\n".join(p if isinstance(p, str) else json.dumps(p) for p in parts if p is not None)
