"""A busy API in front of another one: the weather a nightly job meets, injected from outside.

`WeatherProxy` is one catch-all route on the fakes' server (http_server.py), independent of
the fake provider's scripted faults: it forwards requests to an upstream API (the fake
provider) and, on its own count, answers some of them itself the way a busy provider does.
In each block of `period` requests (a seeded order), one gets "overloaded" (Anthropic 529,
OpenAI 503), one a 429 with `retry-after`, one a 500; and any request longer than its window
gets the provider's 400 "prompt is too long", whatever the upstream would have said. A busy
hour starts with a burst: the first `burst` requests are all "overloaded".
"""
from __future__ import annotations

import http.client
import random
import threading
from collections import Counter
from urllib.parse import urlsplit

from hermes_pipeline.testing.http_server import (
    ANY_METHOD,
    ANY_PATH,
    REDACTED,
    LoopbackServer,
    Reply,
    Request,
    Route,
    ServedFake,
    json_reply,
)

OVERLOADED, RATE_LIMITED, SERVER_ERROR = "overloaded", "rate_limited", "server_error"


def _anthropic(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _openai(message: str, kind: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def weather_answer(provider: str, what: str, retry_after: float) -> tuple[int, dict, dict]:
    """Status, body and headers of a busy provider's refusal."""
    if what == RATE_LIMITED:
        body = (_anthropic("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
                if provider == "anthropic" else
                _openai("Rate limit reached for gpt-4o on requests per min. Please try again in 1s.", "requests",
                        "rate_limit_exceeded"))
        return 429, body, {"retry-after": f"{retry_after:g}"}
    if what == OVERLOADED:
        if provider == "anthropic":
            return 529, _anthropic("overloaded_error", "Overloaded"), {}
        return 503, _openai("The server is overloaded or not ready yet.", "server_error", None), {}
    body = (_anthropic("api_error", "Internal server error") if provider == "anthropic" else
            _openai("The server had an error processing your request.", "server_error", None))
    return 500, body, {}


def too_long_answer(provider: str, tokens: int, window: int) -> tuple[int, dict, dict]:
    if provider == "anthropic":
        return 400, _anthropic("invalid_request_error", f"prompt is too long: {tokens} tokens > {window} maximum"), {}
    return 400, _openai(f"This model's maximum context length is {window} tokens. However, your messages resulted "
                        f"in {tokens} tokens. Please reduce the length of the messages.", "invalid_request_error",
                        "context_length_exceeded"), {}


class WeatherProxy(ServedFake):
    """Start with `with WeatherProxy(upstream, provider, window_tokens) as proxy:`; point the client at
    `proxy.url` (the upstream's own path prefix, such as /v1, is kept). `answered` counts what it did.
    API keys are not passed on (the fake upstream takes any): the server never keeps them."""

    def __init__(self, upstream: str, provider: str, window_tokens: int, seed: int = 0, period: int = 11,
                 retry_after: float = 1.0, burst: int = 0):
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        self.provider, self.window, self.period, self.retry_after = provider, window_tokens, period, retry_after
        self.rng = random.Random(seed)
        self.block: list[str | None] = []
        self.burst = burst
        self.answered: Counter = Counter()
        self.lock = threading.Lock()
        self.server = LoopbackServer([Route(ANY_METHOD, ANY_PATH, self.handle)])

    @property
    def url(self) -> str:
        return self.server.base_url + self.prefix

    def _weather(self) -> str | None:
        """What the next request meets: one of each fault per block of `period`, in a seeded order."""
        with self.lock:
            if self.burst > 0:
                self.burst -= 1
                return OVERLOADED
            if not self.block:
                self.block = [OVERLOADED, RATE_LIMITED, SERVER_ERROR] + [None] * (self.period - 3)
                self.rng.shuffle(self.block)
            return self.block.pop()

    def handle(self, request: Request) -> Reply:
        what = self._weather()
        tokens = len(request.raw) // 4           # a rough count of what was sent: this API's window is in tokens
        if what is not None:
            reply = json_reply(*weather_answer(self.provider, what, self.retry_after))
        elif request.method == "POST" and tokens > self.window:
            what = "too_long"
            reply = json_reply(*too_long_answer(self.provider, tokens, self.window))
        else:
            what = "forwarded"
            reply = self._forward(request)
        with self.lock:
            self.answered[what] += 1
        return reply

    def _forward(self, request: Request) -> Reply:
        connection = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            path = request.target if request.target.startswith(self.prefix) else self.prefix + request.target
            headers = {k: v for k, v in request.headers.items()
                       if k not in ("host", "content-length") and v != REDACTED}
            connection.request(request.method, path, body=request.raw or None, headers=headers)
            response = connection.getresponse()
            data = response.read()
            kept = {k: v for k, v in response.getheaders()
                    if k.lower() in ("content-type", "request-id", "x-request-id", "retry-after")}
            return Reply(response.status, data, kept)
        finally:
            connection.close()
