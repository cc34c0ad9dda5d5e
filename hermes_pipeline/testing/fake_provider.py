"""Deterministic fake LLM API for tests and dry runs: routes on the fakes' one server (http_server.py).

The real ``anthropic`` and ``openai`` SDKs can talk to it through ``base_url``:

    with FakeProvider() as fake:
        anthropic.Anthropic(base_url=fake.base_url, api_key="x")         # POST /v1/messages
        openai.OpenAI(base_url=fake.openai_base_url, api_key="x")        # POST /v1/chat/completions

Replies are compaction summaries built only from the request, so the same
request always yields the same text. Faults (rate limits, 5xx, context-length
errors, hangs...) can be scripted per request with ``FakeProvider.script``.
Both batch APIs are served too (``FakeProvider.batches``, fake_batches.py:
Anthropic Message Batches, OpenAI Batch and Files), with their own script.

The routes and the CLI live here; the faults in fake_faults.py, request parsing
and the summary in fake_summary.py, the response bodies in fake_replies.py
(the public names are re-exported here). Only the standard library is used,
so this can ship with the package.
Run ``python -m hermes_pipeline.testing.fake_provider --help`` for the CLI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import threading
from collections import Counter, deque
from functools import partial
from typing import Any, Callable, Iterable, Mapping

from hermes_pipeline.testing import fake_batches
from hermes_pipeline.testing.fake_batches import FakeBatches
from hermes_pipeline.testing.fake_faults import (  # noqa: F401 - the constructors are re-exported
    ERROR_KINDS,
    Fault,
    as_fault,
    auth_error,
    context_length,
    empty,
    forbidden,
    garbled,
    hang,
    insufficient_quota,
    latency,
    overloaded,
    rate_limit,
    server_error,
    truncated,
)
from hermes_pipeline.testing.fake_replies import (
    anthropic_error,
    anthropic_message,
    bad_request,
    context_error,
    fault_response,
    openai_completion,
)
from hermes_pipeline.testing.fake_summary import (
    ANTHROPIC,
    OPENAI,
    Prompt,
    approx_tokens,
    build_summary,
    parse_request,
    summarize_request,
)
from hermes_pipeline.testing.http_server import ANY_METHOD, LoopbackServer, Reply, Request, Route, ServedFake

# the fault constructors are named after their kinds; the public names of the package
__all__ = ["FakeProvider", "Fault", *sorted(ERROR_KINDS), "hang", "latency", "truncated", "empty", "garbled",
           "summarize_request", "approx_tokens"]

# Both SDKs join base_url + "/messages" or "/chat/completions"; accept the
# path with and without "/v1" so either base_url style works.
_API_PATHS = {
    "/v1/messages": ANTHROPIC,
    "/messages": ANTHROPIC,
    "/v1/chat/completions": OPENAI,
    "/chat/completions": OPENAI,
}

# OpenAI only caches prompt prefixes of at least this many tokens.
OPENAI_CACHE_MIN_TOKENS = 1024


# --------------------------------------------------------------------------
# Routes
# --------------------------------------------------------------------------


class FakeProvider(ServedFake):
    """Deterministic Anthropic + OpenAI compatible server on 127.0.0.1.

    Attributes callers may set at any time:
      default_latency  seconds added before every response
      max_input_chars  requests with more system+message characters get a context-length error
      log              print one access-log line per request to stderr
    and read: in_flight, peak_in_flight (requests being answered now, and at most at once)
    """

    def __init__(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        default_latency: float = 0.0,
        max_input_chars: int | None = None,
        log: bool = False,
    ) -> None:
        self.default_latency = default_latency
        self.max_input_chars = max_input_chars
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)   # a request entered or left
        self._faults_lock = threading.Lock()              # only ever taken last: no lock is taken under it
        # any method: a GET on an API path is answered as the call it names (a 400, no body), as before routes
        routes = [Route(ANY_METHOD, path, partial(self._call, provider)) for path, provider in _API_PATHS.items()]
        routes += [Route(ANY_METHOD, pattern, self._batch_call) for pattern in fake_batches.PATHS]
        self.server = LoopbackServer(routes, host=host, port=port, log=log, fallback=partial(self._call, None),
                                     on_arrival=self._arrived)
        self._reset_state()

    def _reset_state(self) -> None:
        with self._faults_lock:
            self._faults: deque[Fault | None] = deque()
            self._matching: dict[str, deque[Fault | None]] = {}
        with self._lock:
            self._cache_seen: set[str] = set()
            self.in_flight = self.peak_in_flight = self._hold_until = 0
            self.batches = FakeBatches(self._respond)    # the batch APIs (fake_batches.py), scripted apart

    # ---- lifecycle -------------------------------------------------------

    def stop(self) -> None:
        self.server.stopping.set()  # wakes handlers sleeping in hang/latency
        with self._changed:
            self._changed.notify_all()  # and those held by hold_replies_until
        self.server.stop()

    @property
    def log(self) -> bool:
        return self.server.log

    @log.setter
    def log(self, value: bool) -> None:
        self.server.log = value

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
        parsed = [as_fault(f) for f in faults]
        with self._faults_lock:
            self._faults.extend(parsed)

    def script_matching(self, text: str, faults: Iterable[Fault | Mapping[str, Any] | str | None]) -> None:
        """Queue faults for the requests whose body holds `text` (say, the exam's questions requests), one
        per such request in arrival order, before the general script."""
        parsed = [as_fault(f) for f in faults]
        with self._faults_lock:
            self._matching.setdefault(text, deque()).extend(parsed)

    @property
    def pending_faults(self) -> list[Fault | None]:
        with self._faults_lock:
            return list(self._faults)

    @property
    def requests(self) -> list[dict]:
        """Snapshot of recorded requests: method, path, headers (secrets redacted), body, fault."""
        return [{"method": r.method, "path": r.path, "headers": r.headers, "body": r.body,
                 "fault": r.notes["fault"].kind if r.notes.get("fault") else None, "time": r.time}
                for r in self.server.requests]

    @property
    def request_count(self) -> int:
        return len(self.server.requests)

    @property
    def path_counts(self) -> dict[str, int]:
        return dict(Counter(r.path for r in self.server.requests))

    def hold_replies_until(self, in_flight: int) -> None:
        """Replies wait until `in_flight` requests are in the server at once (then none waits): overlap shown
        by the requests themselves, however slow the machine."""
        with self._lock:
            self._hold_until = in_flight

    def wait_for_requests(self, count: int, timeout: float = 60.0) -> int:
        """Wait until `count` requests were recorded (a client that timed out on a request the server had not
        read yet is ahead of the record); returns how many were."""
        return self.server.wait_for_requests(count, timeout)

    def reset(self) -> None:
        """Forget requests, counters, pending faults and the prompt cache."""
        self.server.clear()
        self._reset_state()

    # ---- request handling -----------------------------------------------

    def _arrived(self, request: Request) -> None:
        """A call takes the next scripted fault as it is recorded, so faults follow arrival order (the batch
        requests have a script of their own)."""
        if not self.batches.owns(request.path):
            with self._faults_lock:
                body = json.dumps(request.body) if self._matching else ""
                queue = next((q for text, q in self._matching.items() if q and text in body), self._faults)
                request.notes["fault"] = queue.popleft() if queue else None

    def _call(self, provider: str | None, request: Request) -> Reply:
        """A Messages or Chat Completions call (provider None: a path the fake does not serve)."""
        fault = request.notes.get("fault")
        return self._answer(request, fault, lambda: self._respond(provider, request.path, request.body, fault,
                                                                   request.seq))

    def _batch_call(self, request: Request) -> Reply:
        return self._answer(request, None, lambda: self.batches.answer(request))

    def _answer(self, request: Request, fault: Fault | None, respond: Callable[[], tuple[int, Any, dict]]) -> Reply:
        self._enter()
        try:
            self._sleep(self.default_latency + (fault.seconds if fault else 0.0))
            status, payload, headers = respond()
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
            headers = {"content-type": "application/json", "request-id": f"req_fake_{request.seq:06d}",
                       **{k.lower(): v for k, v in headers.items()}}
            return Reply(status, data, headers)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _enter(self) -> None:
        """Count the request in flight (and the peak); held while hold_replies_until says so."""
        with self._changed:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            if self.in_flight >= self._hold_until:
                self._hold_until = 0
                self._changed.notify_all()
            self._changed.wait_for(lambda: not self._hold_until or self.server.stopping.is_set())

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.server.stopping.wait(seconds)

    def _respond(
        self, provider: str | None, path: str, body: Any, fault: Fault | None, seq: int
    ) -> tuple[int, dict, dict]:
        if provider is None:
            return 404, anthropic_error("not_found_error", f"Not found: {path}"), {}
        if not isinstance(body, dict):
            return 400, bad_request(provider, "Request body must be a JSON object"), {}
        if body.get("stream"):
            return 400, bad_request(provider, "The fake provider does not support streaming"), {}
        prompt = parse_request(body, provider)
        if fault and fault.kind in ERROR_KINDS:
            return fault_response(provider, fault, prompt)
        if self.max_input_chars is not None and prompt.total_chars > self.max_input_chars:
            limit = approx_tokens(self.max_input_chars)
            return (*context_error(provider, approx_tokens(prompt.total_chars), limit), {})
        return 200, self._success(provider, prompt, fault, seq), {}

    def _success(self, provider: str, prompt: Prompt, fault: Fault | None, seq: int) -> dict:
        text = build_summary(prompt)
        stop = "end_turn" if provider == ANTHROPIC else "stop"
        if fault and fault.kind == "truncated":
            text = text[: len(text) // 2]
            stop = "max_tokens" if provider == ANTHROPIC else "length"
        elif fault and fault.kind == "empty":
            text = " \n"
        elif fault and fault.kind == "garbled":
            text = "Sure! Here is what I think about this conversation: it went well."
        msg_id = f"{seq:06d}{hashlib.sha256(text.encode()).hexdigest()[:18]}"
        if provider == ANTHROPIC:
            usage = self._anthropic_usage(prompt, text)
            return anthropic_message(f"msg_fake_{msg_id}", prompt.model, text, stop, usage)
        usage = self._openai_usage(prompt, text)
        return openai_completion(f"chatcmpl-fake{msg_id}", prompt.model, text, stop, usage)

    def _first_sighting(self, text: str) -> bool:
        """True the first time this exact text is cached by this server instance."""
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self._lock:
            if key in self._cache_seen:
                return False
            self._cache_seen.add(key)
            return True

    def _anthropic_usage(self, prompt: Prompt, text: str) -> dict:
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

    def _openai_usage(self, prompt: Prompt, text: str) -> dict:
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
    parser.add_argument("--batch-polls", type=int, default=2,
                        help="looks at a batch that say 'in progress' before it ends (a slow finish)")
    parser.add_argument("--batch-errored-every", type=int, default=0, metavar="N",
                        help="every N-th batch item comes back errored (0: none)")
    parser.add_argument("--batch-expired-every", type=int, default=0, metavar="N",
                        help="every N-th batch item comes back expired (0: none)")
    args = parser.parse_args(argv)

    # Ctrl-C (or SIGTERM) must reach the main thread: a signal the kernel gives to a server thread would
    # leave the main thread asleep. The server's threads inherit this mask; the main thread waits for them.
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    provider = FakeProvider(
        port=args.port,
        host=args.host,
        default_latency=args.latency,
        max_input_chars=args.max_input_chars,
        log=not args.quiet,
    ).start()
    provider.batches.polls_in_progress = args.batch_polls
    provider.batches.errored_every, provider.batches.expired_every = args.batch_errored_every, args.batch_expired_every
    print(f"anthropic base_url: {provider.anthropic_base_url}   (POST /v1/messages)")
    print(f"openai    base_url: {provider.openai_base_url}   (POST /v1/chat/completions)")
    print("batch APIs: /v1/messages/batches (Anthropic), /v1/files + /v1/batches (OpenAI)")
    print("Any API key is accepted. Ctrl-C to stop.", flush=True)
    try:
        signal.sigwait(stop_signals)
    finally:
        provider.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
