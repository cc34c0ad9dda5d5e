"""One request to an LLM provider, done the same way for both SDKs.

- retries (retries.py): tenacity, backoff with jitter, `retry-after` honoured, retry on
  429/5xx/529/timeouts/dropped connections, never on other 4xx;
- a reply that is cut off, empty or has no summary sections is a failed attempt;
- the circuit breaker (breaker.py) trips on a dead endpoint, not on weather;
- the request cache (request_cache.py): a rerun never pays twice;
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
from typing import Callable

from hermes_pipeline.analysis.redact import REDACTED, redact_secrets
from hermes_pipeline.config import ConfigError
from hermes_pipeline.config.schema import (
    AuxiliaryCompressionConfig,
    BatchConfig,
    BreakerConfig,
    CacheConfig,
    LLMSummarizerConfig,
    RetryConfig,
    filled,
)
from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.summarizers.llm.breaker import CircuitBreaker, endpoint_down
from hermes_pipeline.summarizers.llm.errors import (
    AuthOrQuota,
    BadReply,
    ContextTooLong,
    Gathered,
    classify,
    classify_item,
    describe,
)
from hermes_pipeline.summarizers.llm.request_cache import RequestCache, request_key
from hermes_pipeline.summarizers.llm.retries import retrying, waits

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
        self._wait = waits(self.initial_backoff, self.max_backoff, self.max_retry_after)
        self.max_output_tokens = int(max_output_tokens or self.options.max_output_tokens)
        self.breaker = CircuitBreaker(filled(BreakerConfig, breaker)["max_failures"], self.label)
        self.model_cfg, self.aux_cfg = model_cfg, aux_cfg
        self.cache = RequestCache(cache["path"], enabled=cache["enabled"])
        batch = filled(BatchConfig, batch)
        self.batch_enabled = bool(batch["enabled"])   # summarizers/llm/batch.py runs the batches
        self.batch_poll_s = float(batch["poll_s"])
        self.batch_max_wait_h = float(batch["max_wait_h"])
        self._gathering: dict[str, dict] | None = None   # batch mode's first pass: key -> request, not sent
        self.readers: dict[str, Callable[[str], str]] = {}   # key -> how a gathered request's answer is read
        self.export_to = batch["export_to"]      # requests written to this file instead of sent (batch_files.py)
        self.import_from = list(batch["import_from"] or [])   # answers read from these files first
        self.imported: dict[str, ItemOutcome] = {}
        self._imported_read = False
        self.batch_tried: set[str] = set()     # keys a batch of this run did not deliver: plain calls
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sem: asyncio.Semaphore | None = None
        self._client = None

    # ---- subclass hooks -------------------------------------------------
    def _make_client(self, api_key: str):
        raise NotImplementedError

    def _request(self, user_prompt: str, max_tokens: int, system: str | None = None) -> dict:
        """The request body; `system`: the instructions (None: the summary prompt's)."""
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
        if (self.export_to or self.import_from) and not self.cache.enabled:
            raise SummarizerFatalError("summarizer.batch.export_to and import_from need the request cache "
                                       "(summarizer.cache.enabled=true): the answers are kept there")
        if self.import_from and not self._imported_read:
            from hermes_pipeline.summarizers.llm.batch_files import read_results
            self.imported = {k: v for k, v in read_results(self.import_from, self).items() if self.cache.get(k) is None}
            self._imported_read = True
            log.info("%s: %d new answer(s) imported from %s", self.label, len(self.imported),
                     ", ".join(self.import_from))
        if self.require_api_key and not self._api_key() and not self.export_to:
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

    async def _attempt(self, params: dict, tally: Tally, split: bool = False,
                       reader: Callable[[str], str] = P.clean_summary) -> str:
        # a split answers a context-length 400, which the endpoint sent: it goes ahead whatever the breaker says
        if not split:       # no call, no wait: the request cache was already asked
            self.breaker.refuse_when_open()
        self._get_client()
        async with self._sem:
            if not split:
                self.breaker.refuse_when_open()
            tally.calls += 1
            try:
                reply = await asyncio.wait_for(self._send(params), self.timeout)
            except Exception as exc:
                self.breaker.attempt_failed(self._no_answer(exc), self._describe(exc))
                kind = self._classify(exc)
                if kind == "too_long":
                    raise ContextTooLong(self._describe(exc)) from exc
                if kind == "fatal":
                    raise AuthOrQuota(self._describe(exc)) from exc
                raise
        self.breaker.succeeded()
        tally.add(reply.usage)
        if reply.cut:
            raise BadReply("reply cut off by the output token limit", cut=True)
        text = reader(reply.text)
        if not text:
            raise BadReply("empty reply" if not P.strip_think(reply.text or "").strip()
                           else "reply has none of the summary sections" if reader is P.clean_summary
                           else "reply not in the asked shape")
        return text

    async def _call(self, params: dict, tally: Tally, split: bool = False, key: str | None = None,
                    reader: Callable[[str], str] = P.clean_summary) -> str:
        if self._gathering is not None:          # batch mode's first pass: written down, not sent
            key = key or self._cache_key(params)
            if key not in self.batch_tried:      # what a batch did not deliver goes as a plain call
                self._gathering[key] = params
                self.readers[key] = reader       # how its answer is read when a batch or a file brings it
            raise Gathered()
        try:
            return await self._call_with_retries(dict(params), tally, split, reader)
        except Exception as exc:
            no_answer = self._no_answer(exc)
            self.breaker.call_failed(endpoint_down(exc, no_answer), no_answer, self._describe(exc))
            raise

    async def _call_with_retries(self, params: dict, tally: Tally, split: bool,
                                 reader: Callable[[str], str] = P.clean_summary) -> str:

        def before_sleep(state):
            tally.retries += 1
            log.warning("%s: %s: attempt %d/%d failed (%s); retrying in %.2fs", self.label,
                        tally.conversation, state.attempt_number, self.attempts,
                        self._describe(state.outcome.exception()), state.next_action.sleep)

        async for attempt in retrying(self.attempts, self._wait, lambda e: self._classify(e) == "retry", before_sleep):
            with attempt:
                try:
                    return await self._attempt(params, tally, split, reader)
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

    def _lookup(self, key: str, tally: Tally, reader: Callable[[str], str] = P.clean_summary) -> dict | None:
        """What the request cache holds for a request: {"text"} (with "note", "via"), or {"too_long"}
        for one a batch found too long. A batch's answer is billed to the first conversation using it.
        An imported answer (summarizer.batch.import_from) is read here, by the reader of its request: one
        not in the asked shape counts as none."""
        hit = self.cache.get(key)
        if hit is None and key in self.imported:
            hit = self._take_imported(key, reader)
        if hit is not None and hit.get("via") == "batch" and self._gathering is None and self.cache.claim(key):
            tally.add_batch(hit.get("usage") or {})
            hit = {**hit, "fresh": True}
        return hit

    async def _cached_call(self, params: dict, tally: Tally, split: bool = False,
                           reader: Callable[[str], str] = P.clean_summary) -> tuple[str, bool]:
        key = self._cache_key(params)
        hit = self._lookup(key, tally, reader)
        if hit is not None and "text" in hit:
            return hit["text"], not hit.get("fresh")
        if hit is not None:
            raise ContextTooLong(hit["too_long"])
        text = await self._call(params, tally, split, key, reader)
        self.cache.put(key, {"text": text})
        return text, False

    async def complete(self, system: str, user: str, max_tokens: int, tally: Tally,
                       reader: Callable[[str], str]) -> tuple[str, bool]:
        """One request other than a summary (the exam's): the same retries, breaker, request cache, batches
        and files; (its reply as `reader` keeps it, answered from the cache). A reply `reader` makes nothing
        of is a failed attempt."""
        return await self._cached_call(self._request(user, max_tokens, system), tally, reader=reader)

    def run_all(self, coroutines: list) -> list:
        """Coroutines (each of its own requests) on the shared event loop, all at once within max_in_flight:
        their results, or the exception each raised."""
        async def together():
            return await asyncio.gather(*coroutines, return_exceptions=True)
        return self._run(together())

    # ---- answers from a file (summarizer.batch.import_from) -------------------------
    def _take_imported(self, key: str, reader: Callable[[str], str]) -> dict | None:
        """An imported answer into the request cache, as a batch's: billed once, at the batch price."""
        outcome = self.imported.pop(key)
        if outcome.state == "succeeded" and not outcome.reply.cut:
            text = reader(outcome.reply.text)
            if text:
                self.cache.put(key, {"text": text, "via": "batch", "usage": outcome.reply.usage})
                return self.cache.get(key)
        elif outcome.state == "errored" and classify_item(outcome.status, outcome.error_type, outcome.error) \
                == "too_long":
            self.cache.put(key, {"too_long": self._scrub(outcome.error)[:400]})
            return self.cache.get(key)
        log.warning("%s: the imported answer to request %s is not usable (%s): it is asked again", self.label,
                    key[:12], outcome.state if outcome.state != "succeeded" else "not in the asked shape")
        return None

    # ---- batch mode's first pass (summarizers/llm/batch.py) ---------------------
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
