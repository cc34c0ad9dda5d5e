"""A fake OpenAI Responses API on 127.0.0.1, scripted like a coding agent's model, for the real Codex CLI.

Codex (`agents/node_modules/.bin/codex`) is pointed at it through a custom model
provider in a temporary CODEX_HOME (`codex_home()` writes the config.toml). Each
request is answered from its own input, so a session is reproducible:

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
"""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hermes_pipeline.tokens import TokenCounter

CODEX = Path(__file__).resolve().parents[1] / "agents" / "node_modules" / ".bin" / "codex"
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


class FakeResponses:
    """The server; `requests` holds every request body, in order.

    `output_size` scales what the scripted commands print (the history grows by
    about that many lines a call); with `patches`, every fifth call is an
    `apply_patch` (a custom tool call) when the request offers that tool.
    """

    def __init__(self, calls_per_turn: int = 3, commands: tuple[str, ...] = DEFAULT_COMMANDS,
                 output_size: int = 400, patches: bool = True, summary_words: int = 150):
        self.calls_per_turn, self.commands, self.output_size = calls_per_turn, commands, output_size
        self.patches, self.summary_words = patches, summary_words
        self.requests: list[dict] = []
        self.counter = TokenCounter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> "FakeResponses":
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 - http.server naming
                provider._handle(self)

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- requests ----------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        if handler.command == "GET":         # model listings: none to offer
            self._send(handler, 200, "application/json", b'{"object":"list","data":[],"models":[]}')
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(handler, 400, "application/json", b'{"error":{"message":"not JSON"}}')
            return
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
        items = self.reply(body, number)
        usage = self.usage(body, items)
        events = [("response.created", {"type": "response.created", "response": {"id": f"resp_{number}"}})]
        events += [("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                   "item": item}) for i, item in enumerate(items)]
        events.append(("response.completed", {"type": "response.completed",
                                               "response": {"id": f"resp_{number}", "usage": usage}}))
        data = b"".join(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode() for name, event in events)
        self._send(handler, 200, "text/event-stream", data)

    @staticmethod
    def _send(handler, status: int, kind: str, data: bytes) -> None:
        handler.send_response(status)
        handler.send_header("content-type", kind)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

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


def codex_home(folder: Path, base_url: str, auto_compact_limit: int | None = None,
               context_window: int | None = None, model: str = "gpt-5.5") -> Path:
    """A CODEX_HOME whose config.toml sends every request to `base_url` (key from FAKE_CODEX_KEY)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f'model = "{model}"', 'model_provider = "fake"']
    if auto_compact_limit is not None:
        lines.append(f"model_auto_compact_token_limit = {auto_compact_limit}")
    if context_window is not None:
        lines.append(f"model_context_window = {context_window}")
    lines += ["", "[model_providers.fake]", 'name = "fake"', f'base_url = "{base_url}"',
              'env_key = "FAKE_CODEX_KEY"', 'wire_api = "responses"', "request_max_retries = 0",
              "stream_max_retries = 0"]
    (folder / "config.toml").write_text("\n".join(lines) + "\n")
    return folder


def rollouts(home: Path) -> list[Path]:
    return sorted((home / "sessions").rglob("rollout-*.jsonl"))
