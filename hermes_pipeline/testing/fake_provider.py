"""Deterministic fake LLM HTTP server for tests and dry runs.

The real ``anthropic`` and ``openai`` SDKs can talk to it through ``base_url``:

    with FakeProvider() as fake:
        anthropic.Anthropic(base_url=fake.base_url, api_key="x")         # POST /v1/messages
        openai.OpenAI(base_url=fake.openai_base_url, api_key="x")        # POST /v1/chat/completions

Replies are compaction summaries built only from the request, so the same
request always yields the same text. Faults (rate limits, 5xx, context-length
errors, hangs...) can be scripted per request with ``FakeProvider.script``.

Only the standard library is used, so this can ship with the package.
Run ``python -m hermes_pipeline.testing.fake_provider --help`` for the CLI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

__all__ = [
    "FakeProvider",
    "Fault",
    "rate_limit",
    "server_error",
    "overloaded",
    "context_length",
    "auth_error",
    "forbidden",
    "insufficient_quota",
    "hang",
    "latency",
    "truncated",
    "empty",
    "summarize_request",
    "approx_tokens",
]

ANTHROPIC = "anthropic"
OPENAI = "openai"

# Both SDKs join base_url + "/messages" or "/chat/completions"; accept the
# path with and without "/v1" so either base_url style works.
_ROUTES = {
    "/v1/messages": ANTHROPIC,
    "/messages": ANTHROPIC,
    "/v1/chat/completions": OPENAI,
    "/chat/completions": OPENAI,
}
_SECRET_HEADERS = {"x-api-key", "authorization", "api-key", "proxy-authorization"}

# Context windows used in context-length error messages when no limit is set.
_DEFAULT_CONTEXT_TOKENS = {ANTHROPIC: 200_000, OPENAI: 128_000}
# OpenAI only caches prompt prefixes of at least this many tokens.
OPENAI_CACHE_MIN_TOKENS = 1024


def approx_tokens(chars: int) -> int:
    """Token estimate used everywhere in the fake: ceil(chars / 4)."""
    return math.ceil(chars / 4)


# --------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------

# Kinds that answer 200 (possibly late); every other kind is an HTTP error.
_NON_ERROR_KINDS = {"hang", "latency", "truncated", "empty"}
_ERROR_KINDS = {
    "rate_limit",
    "server_error",
    "overloaded",
    "context_length",
    "auth_error",
    "forbidden",
    "insufficient_quota",
}


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, applied to exactly one request."""

    kind: str
    status: int | None = None  # overrides the HTTP status for error kinds
    retry_after: float | None = None  # seconds, sent as the retry-after header
    seconds: float = 0.0  # delay for hang / latency
    limit_tokens: int | None = None  # context window quoted by context_length

    def __post_init__(self) -> None:
        if self.kind not in _ERROR_KINDS | _NON_ERROR_KINDS:
            raise ValueError(f"unknown fault kind: {self.kind!r}")


def rate_limit(retry_after: float | None = 1) -> Fault:
    """429 with a retry-after header (omitted when retry_after is None)."""
    return Fault("rate_limit", retry_after=retry_after)


def server_error(status: int = 500) -> Fault:
    """5xx with the provider's server-error body."""
    if status not in (500, 502, 503, 504):
        raise ValueError("server_error status must be 500, 502, 503 or 504")
    return Fault("server_error", status=status)


def overloaded(status: int | None = None) -> Fault:
    """Anthropic: 529 overloaded_error. OpenAI has no 529, so it gets 503 unless status is given."""
    return Fault("overloaded", status=status)


def context_length(limit_tokens: int | None = None) -> Fault:
    """400 with the provider's prompt-too-long / context_length_exceeded body."""
    return Fault("context_length", limit_tokens=limit_tokens)


def auth_error() -> Fault:
    """401 authentication_error / invalid_api_key."""
    return Fault("auth_error")


def forbidden() -> Fault:
    """403 permission_error / request_forbidden."""
    return Fault("forbidden")


def insufficient_quota() -> Fault:
    """OpenAI: 429 insufficient_quota. Anthropic: 400 'credit balance is too low'."""
    return Fault("insufficient_quota")


def hang(seconds: float) -> Fault:
    """Wait `seconds` before answering normally, so a shorter client timeout fires."""
    return Fault("hang", seconds=seconds)


def latency(seconds: float) -> Fault:
    """Answer normally after an extra `seconds`."""
    return Fault("latency", seconds=seconds)


def truncated() -> Fault:
    """200 cut short: stop_reason max_tokens / finish_reason length."""
    return Fault("truncated")


def empty() -> Fault:
    """200 whose text is whitespace only."""
    return Fault("empty")


def _as_fault(item: Fault | Mapping[str, Any] | str | None) -> Fault | None:
    """Script entries may be Fault objects, dicts, bare kind names, or None (= normal)."""
    if item is None or isinstance(item, Fault):
        return item
    if isinstance(item, str):
        return Fault(item)
    if isinstance(item, Mapping):
        return Fault(**item)
    raise TypeError(f"cannot use {item!r} as a fault")


# --------------------------------------------------------------------------
# Request parsing
# --------------------------------------------------------------------------


@dataclass
class _Prompt:
    """Provider-neutral view of a request, enough to summarize and bill it."""

    model: str
    max_tokens: int | None
    system: str
    messages: list[tuple[str, str]]  # (role, text)
    cached_blocks: list[str]  # texts marked for caching

    @property
    def total_chars(self) -> int:
        return len(self.system) + sum(len(text) for _, text in self.messages)


def _text_of(content: Any) -> str:
    """Flatten any content shape (string, block list, tool blocks) to plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(part) for part in content) if t)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        if "content" in content:  # tool_result blocks nest their content
            return _text_of(content["content"])
        if "input" in content:  # tool_use blocks carry JSON arguments
            return json.dumps(content["input"], sort_keys=True)
    return ""


def _cached_texts(blocks: Any) -> list[str]:
    """Texts of blocks carrying cache_control (only block lists can carry it)."""
    if not isinstance(blocks, list):
        return []
    return [_text_of(b) for b in blocks if isinstance(b, dict) and b.get("cache_control")]


def _parse_anthropic(body: dict) -> _Prompt:
    messages, cached = [], _cached_texts(body.get("system"))
    for msg in body.get("messages") or []:
        messages.append((str(msg.get("role", "")), _text_of(msg.get("content"))))
        cached += _cached_texts(msg.get("content"))
    return _Prompt(
        model=str(body.get("model", "")),
        max_tokens=body.get("max_tokens"),
        system=_text_of(body.get("system")),
        messages=messages,
        cached_blocks=cached,
    )


def _openai_message_text(msg: dict) -> str:
    """Message content plus any tool-call arguments an assistant message carries."""
    parts = [_text_of(msg.get("content"))]
    for call in msg.get("tool_calls") or []:
        parts.append(str((call.get("function") or {}).get("arguments", "")))
    return "\n".join(p for p in parts if p)


def _parse_openai(body: dict) -> _Prompt:
    system, messages = [], []
    for msg in body.get("messages") or []:
        role, text = str(msg.get("role", "")), _openai_message_text(msg)
        # OpenAI has no separate system field; system/developer turns play that role.
        if role in ("system", "developer"):
            system.append(text)
        else:
            messages.append((role, text))
    return _Prompt(
        model=str(body.get("model", "")),
        max_tokens=body.get("max_completion_tokens", body.get("max_tokens")),
        system="\n".join(system),
        messages=messages,
        cached_blocks=[],
    )


# --------------------------------------------------------------------------
# Deterministic summary
# --------------------------------------------------------------------------

_EXTS = (
    "py|pyi|ipynb|js|jsx|ts|tsx|mjs|cjs|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|md|rst|txt|"
    "csv|tsv|sql|sh|bash|zsh|ps1|rs|go|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|m|html|css|"
    "scss|xml|lock|log|proto|tf|dockerfile|gradle|mk"
)
# Either a path with an extension we recognise, or an absolute/relative path with a slash.
_PATH_RE = re.compile(
    rf"(?<![\w:/.@-])(?:"
    rf"(?:~|\.{{1,2}})?/?(?:[\w.-]+/)*[\w-][\w.-]*\.(?:{_EXTS})(?![\w-])"
    rf"|(?:~|\.{{1,2}})?/(?:[\w.-]+/)+[\w.-]+"
    rf")"
)
_CONSTRAINT_RE = re.compile(r"\b(must|never|always|don't|do not|prefer|avoid|required|should)\b", re.I)
_DONE_RE = re.compile(r"\b(done|completed?|fixed|implemented|added|passed|merged)\b", re.I)
_WIP_RE = re.compile(r"\b(in progress|working on|wip|currently|ongoing)\b", re.I)
_BLOCKED_RE = re.compile(r"\b(error|failed|failure|exception|blocked|traceback|cannot)\b", re.I)
_DECISION_RE = re.compile(r"\b(decided|decision|chose|chosen|going with|switched to|will use)\b", re.I)
_NEXT_RE = re.compile(r"\b(next|todo|follow[- ]up|then)\b", re.I)

_MAX_LINE = 160
_MAX_HITS = 3


def _clean(line: str) -> str:
    """One-line, heading-free, bounded copy of a transcript line."""
    line = re.sub(r"\s+", " ", line).strip().lstrip("#>*-• ").strip()
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 3] + "..."


def _lines(text: str) -> list[str]:
    return [c for c in (_clean(line) for line in text.splitlines()) if c]


def _hits(lines: list[str], pattern: re.Pattern[str]) -> list[str]:
    return [f"- {line}" for line in lines if pattern.search(line)][:_MAX_HITS]


def _file_paths(text: str, limit: int = 20) -> list[str]:
    found = dict.fromkeys(m.group(0).rstrip(".") for m in _PATH_RE.finditer(text))
    return list(found)[:limit]


def _build_summary(prompt: _Prompt) -> str:
    """Summary with the ten required headings, every one followed by request-derived lines."""
    body = "\n".join(text for _, text in prompt.messages)
    user_text = "\n".join(text for role, text in prompt.messages if role == "user")
    lines = _lines(body)
    user_lines = _lines(user_text) or lines or ["(no message text)"]
    roles = Counter(role for role, _ in prompt.messages)
    role_desc = ", ".join(f"{n} {r}" for r, n in sorted(roles.items())) or "none"
    digest = hashlib.sha256(user_text.encode("utf-8")).hexdigest()[:16]
    n = len(lines)
    sections = [
        ("## Goal", [f"- {user_lines[0]}"]),
        ("## Constraints & Preferences", _hits(lines, _CONSTRAINT_RE)
         or [f"- None stated; reply bounded by max_tokens={prompt.max_tokens} for model {prompt.model}"]),
        ("## Progress", [f"- Compacted {len(prompt.messages)} messages ({role_desc})"]),
        ("### Done", _hits(lines, _DONE_RE) or [f"- Read all {n} non-empty lines"]),
        ("### In Progress", _hits(lines, _WIP_RE) or [f"- Summarizing {prompt.total_chars} characters"]),
        ("### Blocked", _hits(lines, _BLOCKED_RE) or [f"- No blockers found in {n} lines"]),
        ("## Key Decisions", _hits(lines, _DECISION_RE) or [f"- No explicit decisions found in {n} lines"]),
        ("## Relevant Files", [f"- {p}" for p in _file_paths(body)]
         or ["- No file paths found in the request"]),
        ("## Next Steps", _hits(lines, _NEXT_RE) or [f"- Continue from: {user_lines[-1]}"]),
        ("## Critical Context", [
            f"- Request digest: sha256:{digest}",
            f"- Characters received: {prompt.total_chars}",
            f"- Model: {prompt.model}",
        ]),
    ]
    return "\n\n".join("\n".join([title, *items]) for title, items in sections) + "\n"


def summarize_request(body: dict, provider: str = ANTHROPIC) -> str:
    """The exact text a normal (fault-free) reply to `body` carries."""
    prompt = _parse_anthropic(body) if provider == ANTHROPIC else _parse_openai(body)
    return _build_summary(prompt)


# --------------------------------------------------------------------------
# Response bodies
# --------------------------------------------------------------------------


def _anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _openai_error(message: str, kind: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _context_error(provider: str, prompt_tokens: int, limit: int | None) -> tuple[int, dict]:
    limit = limit or _DEFAULT_CONTEXT_TOKENS[provider]
    tokens = max(prompt_tokens, limit + 1)  # the quoted count must exceed the limit
    if provider == ANTHROPIC:
        return 400, _anthropic_error(
            "invalid_request_error", f"prompt is too long: {tokens} tokens > {limit} maximum"
        )
    return 400, _openai_error(
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )


_ANTHROPIC_5XX = {
    500: ("api_error", "Internal server error"),
    502: ("api_error", "Bad gateway"),
    503: ("api_error", "Service unavailable"),
    504: ("timeout_error", "Request timed out"),
}
_OPENAI_5XX = {
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway.",
    503: "The engine is currently overloaded, please try again later.",
    504: "Gateway timeout.",
}


def _anthropic_fault(fault: Fault) -> tuple[int, dict]:
    """Status and body of the real Anthropic API for each error kind."""
    kind = fault.kind
    if kind == "rate_limit":
        return 429, _anthropic_error(
            "rate_limit_error",
            "This request would exceed the rate limit for your organization. Please retry later.",
        )
    if kind == "server_error":
        status = fault.status or 500
        return status, _anthropic_error(*_ANTHROPIC_5XX.get(status, _ANTHROPIC_5XX[500]))
    if kind == "overloaded":
        return fault.status or 529, _anthropic_error("overloaded_error", "Overloaded")
    if kind == "auth_error":
        return 401, _anthropic_error("authentication_error", "invalid x-api-key")
    if kind == "forbidden":
        return 403, _anthropic_error(
            "permission_error", "Your API key does not have permission to use the specified resource."
        )
    assert kind == "insufficient_quota", kind
    # Anthropic reports an exhausted balance as a 400, not a 429.
    return 400, _anthropic_error(
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. "
        "Please go to Plans & Billing to upgrade or purchase credits.",
    )


def _openai_fault(fault: Fault) -> tuple[int, dict]:
    """Status and body of the real OpenAI API for each error kind."""
    kind = fault.kind
    if kind == "rate_limit":
        return 429, _openai_error(
            "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
        )
    if kind in ("server_error", "overloaded"):
        status = fault.status or (503 if kind == "overloaded" else 500)
        return status, _openai_error(_OPENAI_5XX.get(status, _OPENAI_5XX[500]), "server_error", None)
    if kind == "auth_error":
        return 401, _openai_error(
            "Incorrect API key provided. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )
    if kind == "forbidden":
        return 403, _openai_error(
            "Country, region, or territory not supported", "request_forbidden",
            "unsupported_country_region_territory",
        )
    assert kind == "insufficient_quota", kind
    return 429, _openai_error(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
    )


def _anthropic_message(msg_id: str, model: str, text: str, stop: str, usage: dict) -> dict:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def _openai_completion(msg_id: str, model: str, text: str, finish: str, usage: dict) -> dict:
    return {
        "id": msg_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": usage,
        "system_fingerprint": "fp_fake",
    }


# --------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps SDK connections alive like a real API would.
    protocol_version = "HTTP/1.1"
    server_version = "FakeProvider/1.0"

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.server.provider._handle(self)  # type: ignore[attr-defined]

    do_GET = do_POST  # unknown routes still get recorded and a JSON 404

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.provider.log:  # type: ignore[attr-defined]
            super().log_message(format, *args)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a hanging handler must never block shutdown
    request_queue_size = 128  # many clients connect at once; the default backlog of 5 resets them
    provider: "FakeProvider"


class FakeProvider:
    """Deterministic Anthropic + OpenAI compatible server on 127.0.0.1.

    Attributes callers may set at any time:
      default_latency  seconds added before every response
      max_input_chars  requests with more system+message characters get a context-length error
      log              print one access-log line per request to stderr
    """

    def __init__(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        default_latency: float = 0.0,
        max_input_chars: int | None = None,
        log: bool = False,
    ) -> None:
        self.host, self.port = host, port
        self.default_latency = default_latency
        self.max_input_chars = max_input_chars
        self.log = log
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        with self._lock:
            self._requests: list[dict] = []
            self._path_counts: Counter[str] = Counter()
            self._faults: deque[Fault | None] = deque()
            self._cache_seen: set[str] = set()

    # ---- lifecycle -------------------------------------------------------

    def start(self) -> "FakeProvider":
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _HTTPServer((self.host, self.port), _Handler)
        self._server.provider = self
        # A short poll interval keeps stop() fast; shutdown() waits for one poll.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-provider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # wakes handlers sleeping in hang/latency
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> "FakeProvider":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """Root URL; pass as Anthropic(base_url=...)."""
        if self._server is None:
            raise RuntimeError("FakeProvider is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        """OpenAI's SDK expects the /v1 prefix inside base_url."""
        return self.base_url + "/v1"

    # ---- scripting and inspection ---------------------------------------

    def script(self, faults: Iterable[Fault | Mapping[str, Any] | str | None]) -> None:
        """Queue faults, one per incoming request in order; None means 'answer normally'."""
        parsed = [_as_fault(f) for f in faults]
        with self._lock:
            self._faults.extend(parsed)

    @property
    def pending_faults(self) -> list[Fault | None]:
        with self._lock:
            return list(self._faults)

    @property
    def requests(self) -> list[dict]:
        """Snapshot of recorded requests: method, path, headers (secrets redacted), body, fault."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def path_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._path_counts)

    def reset(self) -> None:
        """Forget requests, counters, pending faults and the prompt cache."""
        self._reset_state()

    # ---- request handling -----------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        path = urlsplit(handler.path).path.rstrip("/") or "/"
        provider = _ROUTES.get(path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        seq, fault = self._record(handler, path, body)
        self._sleep(self.default_latency + (fault.seconds if fault else 0.0))
        status, payload, headers = self._respond(provider, path, body, fault, seq)
        headers["request-id"] = f"req_fake_{seq:06d}"
        self._send(handler, status, payload, headers)

    def _record(
        self, handler: BaseHTTPRequestHandler, path: str, body: Any
    ) -> tuple[int, Fault | None]:
        """Store the request and pop its fault atomically, so faults follow arrival order."""
        headers = {
            k.lower(): ("<redacted>" if k.lower() in _SECRET_HEADERS else v)
            for k, v in handler.headers.items()
        }
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
            self._requests.append(
                {
                    "method": handler.command,
                    "path": path,
                    "headers": headers,
                    "body": body,
                    "fault": fault.kind if fault else None,
                    "time": time.time(),
                }
            )
            self._path_counts[path] += 1
            return len(self._requests), fault

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _respond(
        self, provider: str | None, path: str, body: Any, fault: Fault | None, seq: int
    ) -> tuple[int, dict, dict]:
        if provider is None:
            return 404, _anthropic_error("not_found_error", f"Not found: {path}"), {}
        if not isinstance(body, dict):
            return 400, self._bad_request(provider, "Request body must be a JSON object"), {}
        if body.get("stream"):
            return 400, self._bad_request(provider, "The fake provider does not support streaming"), {}
        prompt = _parse_anthropic(body) if provider == ANTHROPIC else _parse_openai(body)
        if fault and fault.kind in _ERROR_KINDS:
            return self._fault_response(provider, fault, prompt)
        if self.max_input_chars is not None and prompt.total_chars > self.max_input_chars:
            limit = approx_tokens(self.max_input_chars)
            return (*_context_error(provider, approx_tokens(prompt.total_chars), limit), {})
        return 200, self._success(provider, prompt, fault, seq), {}

    @staticmethod
    def _bad_request(provider: str, message: str) -> dict:
        if provider == ANTHROPIC:
            return _anthropic_error("invalid_request_error", message)
        return _openai_error(message, "invalid_request_error", None)

    @staticmethod
    def _fault_response(provider: str, fault: Fault, prompt: _Prompt) -> tuple[int, dict, dict]:
        if fault.kind == "context_length":
            status, body = _context_error(provider, approx_tokens(prompt.total_chars), fault.limit_tokens)
        elif provider == ANTHROPIC:
            status, body = _anthropic_fault(fault)
        else:
            status, body = _openai_fault(fault)
        headers = {}
        if fault.kind == "rate_limit" and fault.retry_after is not None:
            headers["retry-after"] = f"{fault.retry_after:g}"
        return status, body, headers

    def _success(self, provider: str, prompt: _Prompt, fault: Fault | None, seq: int) -> dict:
        text = _build_summary(prompt)
        stop = "end_turn" if provider == ANTHROPIC else "stop"
        if fault and fault.kind == "truncated":
            text = text[: len(text) // 2]
            stop = "max_tokens" if provider == ANTHROPIC else "length"
        elif fault and fault.kind == "empty":
            text = " \n"
        msg_id = f"{seq:06d}{hashlib.sha256(text.encode()).hexdigest()[:18]}"
        if provider == ANTHROPIC:
            usage = self._anthropic_usage(prompt, text)
            return _anthropic_message(f"msg_fake_{msg_id}", prompt.model, text, stop, usage)
        usage = self._openai_usage(prompt, text)
        return _openai_completion(f"chatcmpl-fake{msg_id}", prompt.model, text, stop, usage)

    def _first_sighting(self, text: str) -> bool:
        """True the first time this exact text is cached by this server instance."""
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self._lock:
            if key in self._cache_seen:
                return False
            self._cache_seen.add(key)
            return True

    def _anthropic_usage(self, prompt: _Prompt, text: str) -> dict:
        # Anthropic bills cached blocks separately: input_tokens is only the rest.
        created = read = cached_chars = 0
        for block in prompt.cached_blocks:
            cached_chars += len(block)
            if self._first_sighting(block):
                created += approx_tokens(len(block))
            else:
                read += approx_tokens(len(block))
        return {
            "input_tokens": approx_tokens(max(0, prompt.total_chars - cached_chars)),
            "output_tokens": approx_tokens(len(text)),
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
        }

    def _openai_usage(self, prompt: _Prompt, text: str) -> dict:
        # OpenAI caches long prompt prefixes automatically; cached tokens are a
        # subset of prompt_tokens. The system/developer turns stand in for the prefix.
        prompt_tokens = approx_tokens(prompt.total_chars)
        prefix_tokens = approx_tokens(len(prompt.system))
        cached = 0
        if prefix_tokens >= OPENAI_CACHE_MIN_TOKENS and not self._first_sighting(prompt.system):
            cached = prefix_tokens
        completion_tokens = approx_tokens(len(text))
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: dict, headers: dict) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (e.g. its timeout fired during a hang); nothing to do.
            handler.close_connection = True


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_pipeline.testing.fake_provider",
        description="Serve a deterministic fake Anthropic/OpenAI API until Ctrl-C.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    parser.add_argument("--max-input-chars", type=int, default=None,
                        help="answer context-length errors above this many prompt characters")
    parser.add_argument("--quiet", action="store_true", help="no access log")
    args = parser.parse_args(argv)

    provider = FakeProvider(
        port=args.port,
        host=args.host,
        default_latency=args.latency,
        max_input_chars=args.max_input_chars,
        log=not args.quiet,
    ).start()
    print(f"anthropic base_url: {provider.anthropic_base_url}   (POST /v1/messages)")
    print(f"openai    base_url: {provider.openai_base_url}   (POST /v1/chat/completions)")
    print("Any API key is accepted. Ctrl-C to stop.", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        provider.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
