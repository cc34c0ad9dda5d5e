"""One request to an LLM provider, done the same way for both SDKs.

- tenacity is the only retry layer (the SDKs' own retries are off, so every
  attempt is counted): exponential backoff with jitter, `retry-after` honoured,
  retry on 429/5xx/529/timeouts/dropped connections, never on other 4xx;
- a reply that is cut off, empty or has no summary sections is a failed attempt;
- a circuit breaker trips on a dead endpoint, not on weather: it counts calls that failed
  after their retries (not attempts; a 429 never counts, it is flow control; a success resets
  it), and, until the endpoint has answered anything, every attempt that got no answer;
- the runner's threads share one event loop in a background thread, and a
  semaphore bounds the requests in flight.
The API key is read from the environment when the client is built and is
scrubbed from every message this module logs, raises or returns.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import date

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from hermes_pipeline.config import ConfigError
from hermes_pipeline.config.schema import (
    AuxiliaryCompressionConfig, BatchConfig, BreakerConfig, CacheConfig, LLMSummarizerConfig, RetryConfig, filled)
from hermes_pipeline.summarizers import prompt as P
from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.summarizers.request_cache import RequestCache, request_key
from hermes_pipeline.summarizers.llm_errors import (
    AuthOrQuota, BadReply, CircuitOpen, ContextTooLong, Gathered, classify, describe, retry_after)
from hermes_pipeline.summarizers.redact import REDACTED, redact_secrets

log = logging.getLogger(__name__)

_KNOWN_BASE_URLS = {"openrouter": "https://openrouter.ai/api/v1"}
# Model names each provider's own API serves (a compatible server at base_url may serve any).
PROVIDER_MODELS = {"anthropic": re.compile(r"claude", re.I),
                   "openai": re.compile(r"(gpt-|o\d|chatgpt-|ft:|text-|davinci|babbage|codex|computer-use)", re.I)}


@dataclass
class Tally:
    """What one summarize() spent: calls, retries and billed tokens."""
    conversation: str = ""
    calls: int = 0
    retries: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {
        "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0})
    batch_items: int = 0            # answers a batch delivered (billed at the batch price)
    batch_usage: dict[str, int] = field(default_factory=dict)

    def add(self, usage: dict[str, int]) -> None:
        for key, value in usage.items():
            self.usage[key] = self.usage.get(key, 0) + int(value or 0)

    def add_batch(self, usage: dict[str, int]) -> None:
        self.add(usage)
        self.batch_items += 1
        for key, value in usage.items():
            self.batch_usage[key] = self.batch_usage.get(key, 0) + int(value or 0)


@dataclass
class Reply:
    """What a provider's `_send` read from one response."""
    text: str
    cut: bool                       # stopped by the output limit
    usage: dict[str, int]


@dataclass
class ItemOutcome:
    """What became of one request of a batch."""
    key: str                        # its cache key (the batch's custom_id)
    state: str                      # succeeded | errored | expired | canceled
    reply: Reply | None = None
    status: int | None = None       # the HTTP status an errored item carries, when it says
    error_type: str = ""
    error: str = ""


class LLMCalls:
    """Provider requests with retries, circuit breaker and request cache; subclasses build
    the client, the request and read the reply. Options a caller leaves out take the schema's
    defaults (config/schema.py), never defaults of this code's own."""

    provider = ""                   # "anthropic" | "openai"
    default_key_env = ""
    options: type = LLMSummarizerConfig     # the schema of the provider's options: their defaults

    def __init__(self, name: str | None = None, max_in_flight: int = LLMSummarizerConfig.max_in_flight,
                 retry: dict | None = None, cache: dict | None = None,
                 api_key_env: str | None = LLMSummarizerConfig.api_key_env,
                 require_api_key: bool = LLMSummarizerConfig.require_api_key,
                 max_output_tokens: int | None = None,
                 model_cfg: dict | None = None, aux_cfg: dict | None = None,
                 default_model: str | None = None, breaker: dict | None = None, batch: dict | None = None):
        model_cfg, aux_cfg = dict(model_cfg or {}), filled(AuxiliaryCompressionConfig, aux_cfg)
        retry, cache = filled(RetryConfig, retry), filled(CacheConfig, cache)
        self.name = name or self.provider
        self.route = self.provider if aux_cfg["provider"] in ("auto", "main") else str(aux_cfg["provider"])
        self.base_url = aux_cfg["base_url"] or _KNOWN_BASE_URLS.get(self.route)
        self.model = self._choose_model(aux_cfg["model"], model_cfg.get("name"), default_model, model_cfg.get("retired"))
        self.key_env = api_key_env or (f"{self.route.upper()}_API_KEY" if self.route in _KNOWN_BASE_URLS
                                       else self.default_key_env)
        self.require_api_key = bool(require_api_key)
        self.max_in_flight = max(1, int(max_in_flight))
        self.attempts = max(1, int(retry["attempts"]))
        self.initial_backoff = float(retry["initial_backoff"])
        self.max_backoff = float(retry["max_backoff"])
        self.max_retry_after = float(retry["max_retry_after"])
        self.timeout = float(retry["timeout"])
        # Jitter scales with the backoff so small test settings stay fast.
        self._backoff = wait_exponential_jitter(initial=self.initial_backoff, max=self.max_backoff,
                                                jitter=self.initial_backoff)
        self.max_output_tokens = int(max_output_tokens or self.options.max_output_tokens)
        self.breaker_limit = max(1, int(filled(BreakerConfig, breaker)["max_failures"]))
        self._failures_in_a_row = 0
        self._answered = False           # the endpoint has sent an HTTP answer (any status) this run
        self._circuit_open: str | None = None     # why the endpoint is left alone, once it is
        self.model_cfg, self.aux_cfg = model_cfg, aux_cfg
        self.cache = RequestCache(cache["path"], enabled=cache["enabled"])
        batch = filled(BatchConfig, batch)
        self.batch_enabled = bool(batch["enabled"])   # summarizers/batch.py runs the batches
        self.batch_poll_s = float(batch["poll_s"])
        self.batch_max_wait_h = float(batch["max_wait_h"])
        self._gathering: dict[str, dict] | None = None   # batch mode's first pass: key -> request, not sent
        self.batch_tried: set[str] = set()     # keys a batch of this run did not deliver: plain calls
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sem: asyncio.Semaphore | None = None
        self._client = None

    # ---- subclass hooks -------------------------------------------------
    def _make_client(self, api_key: str):
        raise NotImplementedError

    def _request(self, user_prompt: str, max_tokens: int) -> dict:
        raise NotImplementedError

    async def _send(self, params: dict) -> Reply:
        raise NotImplementedError

    def _status_error(self) -> type[BaseException]:
        raise NotImplementedError

    def _connection_error(self) -> type[BaseException]:
        raise NotImplementedError

    # ---- start-up and secrets -------------------------------------------
    @property
    def official_endpoint(self) -> bool:
        """The provider's own API: only its own models exist there."""
        return not self.base_url and self.route == self.provider

    def _choose_model(self, summary_model: str | None, run_model: str | None, default_model: str | None,
                      retired: str | None = None) -> str:
        """auxiliary.compression.model, else the run's model if this provider serves it and has not retired it,
        else default_model."""
        if summary_model:
            return str(summary_model)
        if run_model and PROVIDER_MODELS[self.provider].match(str(run_model)):
            if not (default_model and _is_past(retired)):
                return str(run_model)
            log.warning("%s was retired on %s: summaries go to %s (auxiliary.compression.model chooses another)",
                        run_model, retired, default_model)
        return str(default_model or run_model or "")   # a compatible server's own model: auxiliary.compression.model

    @property
    def label(self) -> str:
        return f"{self.name}:{self.model}"

    def _api_key(self) -> str | None:
        return os.environ.get(self.key_env) or None

    def check(self) -> None:
        if not self.model:
            raise SummarizerFatalError(
                f"{self.name} summarizer: no model (set auxiliary.compression.model or model.name)")
        if self.official_endpoint and not PROVIDER_MODELS[self.provider].match(self.model):
            raise SummarizerFatalError(
                f"auxiliary.compression.model={self.model!r} is not an {self.provider} model, but "
                f"summarizer={self.name} calls the {self.provider} API: name one of its models, pick the "
                "summarizer of that model's provider, or set auxiliary.compression.base_url for a compatible server")
        if self.batch_enabled and not self.cache.enabled:
            raise SummarizerFatalError("summarizer.batch.enabled=true needs the request cache "
                                       "(summarizer.cache.enabled=true): batch results are kept there")
        if self.require_api_key and not self._api_key():
            raise SummarizerFatalError(
                f"{self.name} summarizer: the environment variable {self.key_env} is not set. "
                f"Export your API key as {self.key_env}, or set summarizer.api_key_env to the "
                "variable that holds it.")

    def _scrub(self, text: str) -> str:
        """Text safe to log or return: the key itself and anything key-like removed."""
        key = self._api_key()
        if key and len(key) >= 4:
            text = text.replace(key, REDACTED)
        return redact_secrets(text)

    def _describe(self, exc: BaseException) -> str:
        return self._scrub(describe(exc))[:400]

    def _classify(self, exc: BaseException) -> str:
        return classify(exc, self._status_error(), self._connection_error())

    # ---- the event loop shared by the runner's threads ---------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=f"{self.name}-loop", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop()).result()

    def _get_client(self):
        # Built inside the loop thread, so the async HTTP pool belongs to that loop.
        if self._client is None:
            self.check()
            self._client = self._make_client(self._api_key() or "not-needed")
            self._sem = asyncio.Semaphore(self.max_in_flight)
        return self._client

    # ---- one request, with retries ---------------------------------------
    def _no_answer(self, exc: BaseException) -> bool:
        return isinstance(exc, (asyncio.TimeoutError, self._connection_error()))

    def _endpoint_down(self, exc: BaseException) -> bool:
        """A failure that says the endpoint itself is unwell or wrong (not this request): no answer, a
        5xx, or 404/405 (a wrong base_url path, or a model the endpoint does not serve: every request fails).
        A 429 is not: the endpoint is alive and asks us to slow down."""
        status = getattr(exc, "status_code", 0) or 0
        return self._no_answer(exc) or status >= 500 or status in (404, 405)

    def _count_failure(self, exc: BaseException, what: str) -> None:
        """One more failure in a row (all in the loop thread); the circuit opens at the limit."""
        self._failures_in_a_row += 1
        if self._failures_in_a_row >= self.breaker_limit and self._circuit_open is None:
            self._circuit_open = (f"{self.label}: circuit open after {self._failures_in_a_row} {what} in a row "
                                  f"({self._describe(exc)}); the endpoint is not called again in this run")
            log.error(self._circuit_open)      # said once; each conversation's fallback names it too

    def _note_attempt_failure(self, exc: BaseException) -> None:
        """An endpoint that has never answered and refuses or drops a connection is dead or mistyped, not
        busy: each such attempt counts, so the run learns it in seconds, not after every call's retries."""
        if not self._no_answer(exc):
            self._answered = True
        elif not self._answered:
            self._count_failure(exc, "attempts without an answer")

    def _note_call_failure(self, exc: BaseException) -> None:
        """A call that failed after its retries counts when the endpoint is to blame (and was not already
        counted attempt by attempt)."""
        if self._endpoint_down(exc) and not (self._no_answer(exc) and not self._answered):
            self._count_failure(exc, "calls failed after their retries")

    async def _attempt(self, params: dict, tally: Tally, split: bool = False) -> str:
        # a split answers a context-length 400, which the endpoint sent: it goes ahead whatever the breaker says
        if self._circuit_open and not split:       # no call, no wait: the request cache was already asked
            raise CircuitOpen(self._circuit_open)
        self._get_client()
        async with self._sem:
            if self._circuit_open and not split:
                raise CircuitOpen(self._circuit_open)
            tally.calls += 1
            try:
                reply = await asyncio.wait_for(self._send(params), self.timeout)
            except Exception as exc:
                self._note_attempt_failure(exc)
                kind = self._classify(exc)
                if kind == "too_long":
                    raise ContextTooLong(self._describe(exc)) from exc
                if kind == "fatal":
                    raise AuthOrQuota(self._describe(exc)) from exc
                raise
        self._failures_in_a_row, self._answered = 0, True
        tally.add(reply.usage)
        if reply.cut:
            raise BadReply("reply cut off by the output token limit", cut=True)
        text = P.clean_summary(reply.text)
        if not text:
            raise BadReply("empty reply" if not P.strip_think(reply.text or "").strip()
                           else "reply has none of the summary sections")
        return text

    def _wait(self, state) -> float:
        asked = retry_after(state.outcome.exception())
        if asked is not None:
            return min(asked, self.max_retry_after)
        return self._backoff(state)

    async def _call(self, params: dict, tally: Tally, split: bool = False, key: str | None = None) -> str:
        if self._gathering is not None:          # batch mode's first pass: written down, not sent
            key = key or self._cache_key(params)
            if key not in self.batch_tried:      # what a batch did not deliver goes as a plain call
                self._gathering[key] = params
            raise Gathered()
        try:
            return await self._call_with_retries(dict(params), tally, split)
        except Exception as exc:
            self._note_call_failure(exc)
            raise

    async def _call_with_retries(self, params: dict, tally: Tally, split: bool) -> str:

        def before_sleep(state):
            tally.retries += 1
            log.warning("%s: %s: attempt %d/%d failed (%s); retrying in %.2fs", self.label,
                        tally.conversation, state.attempt_number, self.attempts,
                        self._describe(state.outcome.exception()), state.next_action.sleep)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts), wait=self._wait, reraise=True,
            retry=retry_if_exception(lambda e: self._classify(e) == "retry"),
            before_sleep=before_sleep)
        async for attempt in retrying:
            with attempt:
                try:
                    return await self._attempt(params, tally, split)
                except BadReply as exc:
                    if exc.cut:   # more room next time
                        self._grow_max_tokens(params)
                    raise
        raise AssertionError("unreachable")

    def _grow_max_tokens(self, params: dict) -> None:
        for key in ("max_tokens", "max_completion_tokens"):
            if key in params:
                params[key] = min(params[key] * 2, max(self.max_output_tokens, params[key]))

    @property
    def endpoint(self) -> str:
        return f"{self.route}@{self.base_url or 'default'}"

    def _cache_key(self, params: dict) -> str:
        # The endpoint is part of the key: a dry run against a fake or local server must
        # never answer a later run against the real API (same route, model and request).
        return request_key(self.endpoint, self.model, params)

    def _lookup(self, key: str, tally: Tally) -> dict | None:
        """What the request cache holds for a request: {"text"} (with "note", "via"), or {"too_long"}
        for one a batch found too long. A batch's answer is billed to the first conversation using it."""
        hit = self.cache.get(key)
        if hit is not None and hit.get("via") == "batch" and self._gathering is None and self.cache.claim(key):
            tally.add_batch(hit.get("usage") or {})
            hit = {**hit, "fresh": True}
        return hit

    async def _cached_call(self, params: dict, tally: Tally, split: bool = False) -> tuple[str, bool]:
        key = self._cache_key(params)
        hit = self._lookup(key, tally)
        if hit is not None and "text" in hit:
            return hit["text"], not hit.get("fresh")
        if hit is not None:
            raise ContextTooLong(hit["too_long"])
        text = await self._call(params, tally, split, key)
        self.cache.put(key, {"text": text})
        return text, False

    # ---- batch mode's first pass (summarizers/batch.py) ---------------------
    def start_gathering(self) -> None:
        self._gathering = {}

    def stop_gathering(self) -> dict[str, dict]:
        """The requests the pass wrote down (cache key -> request), not yet answered anywhere."""
        gathered, self._gathering = self._gathering or {}, None
        return gathered

    # ---- end of the run ---------------------------------------------------
    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None:
            if self._client is not None:
                try:
                    asyncio.run_coroutine_threadsafe(self._client.close(), loop).result(10)
                except Exception as exc:   # closing must not mask the run's result
                    log.debug("%s: closing the client failed: %s", self.name, type(exc).__name__)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
        self._client = self._sem = None
        self.cache.close()


def _is_past(retired: str | None) -> bool:
    """Whether a model's `retired` day (YYYY-MM-DD) has come."""
    if not retired:
        return False
    try:
        return date.fromisoformat(str(retired)) <= date.today()
    except ValueError:
        raise ConfigError(f"model.retired must be a day, YYYY-MM-DD, not {retired!r}") from None
