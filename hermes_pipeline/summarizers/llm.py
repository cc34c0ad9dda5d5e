"""Abstractive summarizers over the official Anthropic and OpenAI(-compatible) SDKs.

One policy for both providers:
- tenacity is the only retry layer (the SDKs' own retries are off, so every
  attempt is counted): exponential backoff with jitter, `retry-after` honoured,
  retry on 429/5xx/529/timeouts/dropped connections, never on other 4xx;
- a reply that is cut off, empty or has no summary sections is a failure;
- "input too long" -> split the middle, summarize the parts, merge them;
- anything else that fails -> the embedded extractive summary, with the reason
  in `SummaryResult.fallback`; auth/quota errors stop the run instead;
- the runner's threads share one event loop in a background thread, and a
  semaphore bounds the requests in flight.
The API key is read from the environment when the client is built and is
scrubbed from every message this module logs, raises or returns.
"""
from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from hermes_pipeline.summarizers import prompt as P
from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.cache import RequestCache, request_key
from hermes_pipeline.summarizers.redact import REDACTED, redact_secrets

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 429, 500, 501, 502, 503, 504, 529}
AUTH_STATUS = {401, 402, 403}
_QUOTA = re.compile(r"insufficient[_ ]quota|credit balance is too low|billing_error", re.I)
_TOO_LONG = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens"
    r"|input is too long|reduce the length|request_too_large|too large for", re.I)
_KNOWN_BASE_URLS = {"openrouter": "https://openrouter.ai/api/v1"}
# Model names each provider's own API serves (a compatible server at base_url may serve any).
PROVIDER_MODELS = {"anthropic": re.compile(r"claude", re.I),
                   "openai": re.compile(r"(gpt-|o\d|chatgpt-|ft:|text-|davinci|babbage|codex|computer-use)", re.I)}


class BadReply(Exception):
    """The model answered, but not with a usable summary (retryable)."""

    def __init__(self, message: str, cut: bool = False):
        super().__init__(message)
        self.cut = cut


class ContextTooLong(Exception):
    """The provider rejected the input as longer than the model's window."""


class AuthOrQuota(Exception):
    """401/403/insufficient quota: no point in trying other conversations."""


class CircuitOpen(Exception):
    """The endpoint failed too often in a row: it is not called again this run."""


@dataclass
class _Tally:
    """What one summarize() spent: calls, retries and billed tokens."""
    conversation: str = ""
    calls: int = 0
    retries: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {
        "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0})

    def add(self, usage: dict[str, int]) -> None:
        for key, value in usage.items():
            self.usage[key] = self.usage.get(key, 0) + int(value or 0)


@dataclass
class _Reply:
    text: str
    cut: bool                       # stopped by the output limit
    usage: dict[str, int]


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, retry-after seconds or date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(float(value), 0.0)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(when.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, OverflowError):
        return None


class LLMSummarizer(Summarizer):
    """Shared machinery; subclasses build the client, the request and read the reply."""

    provider = ""                   # "anthropic" | "openai"
    default_key_env = ""
    default_max_output_tokens = 32000

    def __init__(self, name: str | None = None, max_in_flight: int = 8,
                 retry: dict | None = None, cache: dict | None = None,
                 api_key_env: str | None = None, require_api_key: bool = True,
                 stop_on_auth_error: bool = True, max_output_tokens: int | None = None,
                 max_input_chars: int | None = P.INPUT_CAP, split: dict | None = None,
                 model_cfg: dict | None = None, aux_cfg: dict | None = None,
                 fallback_cfg: dict | None = None, default_model: str | None = None,
                 breaker: dict | None = None, max_fallback_share: float = 0.2):
        model_cfg, aux_cfg = dict(model_cfg or {}), dict(aux_cfg or {})
        retry, cache, split = dict(retry or {}), dict(cache or {}), dict(split or {})
        self.name = name or self.provider
        aux_provider = aux_cfg.get("provider") or "auto"
        self.route = self.provider if aux_provider in ("auto", "main") else str(aux_provider)
        self.base_url = aux_cfg.get("base_url") or _KNOWN_BASE_URLS.get(self.route)
        self.model = self._choose_model(aux_cfg.get("model"), model_cfg.get("name"), default_model)
        self.key_env = api_key_env or (f"{self.route.upper()}_API_KEY" if self.route in _KNOWN_BASE_URLS
                                       else self.default_key_env)
        self.require_api_key = bool(require_api_key)
        self.stop_on_auth_error = bool(stop_on_auth_error)
        self.max_in_flight = max(1, int(max_in_flight))
        self.attempts = max(1, int(retry.get("attempts", 5)))
        self.initial_backoff = float(retry.get("initial_backoff", 1.0))
        self.max_backoff = float(retry.get("max_backoff", 30.0))
        self.max_retry_after = float(retry.get("max_retry_after", 120.0))
        self.timeout = float(retry.get("timeout", 120))
        # Jitter scales with the backoff so small test settings stay fast.
        self._backoff = wait_exponential_jitter(multiplier=self.initial_backoff, max=self.max_backoff,
                                                jitter=self.initial_backoff)
        self.max_output_tokens = int(max_output_tokens or self.default_max_output_tokens)
        self.max_input_chars = int(max_input_chars) if max_input_chars else None
        self.max_parts = max(2, int(split.get("max_parts", 16)))
        self.merge_with_model = split.get("merge", "model") == "model"
        self.fallback_cfg = dict(fallback_cfg or {})
        self.max_fallback_share = float(max_fallback_share)   # read by the run: exit 4 above it
        self.breaker_limit = max(1, int((breaker or {}).get("max_failures", 3)))
        self._failures_in_a_row = 0
        self._circuit_open: str | None = None     # why the endpoint is left alone, once it is
        self.model_cfg, self.aux_cfg = model_cfg, aux_cfg
        self.cache = RequestCache(cache.get("path", ".hermes-cache/requests.sqlite"),
                                  enabled=cache.get("enabled", True))
        self._fatal: str | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sem: asyncio.Semaphore | None = None
        self._client = None
        self._extractive = None

    # ---- subclass hooks -------------------------------------------------
    def _make_client(self, api_key: str):
        raise NotImplementedError

    def _request(self, user_prompt: str, max_tokens: int) -> dict:
        raise NotImplementedError

    async def _send(self, params: dict) -> _Reply:
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

    def _choose_model(self, summary_model: str | None, run_model: str | None, default_model: str | None) -> str:
        """auxiliary.compression.model, else the run's model if this provider serves it, else default_model."""
        if summary_model:
            return str(summary_model)
        if run_model and (not self.official_endpoint or PROVIDER_MODELS[self.provider].match(str(run_model))):
            return str(run_model)
        return str(default_model or run_model or "")

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
                f"auxiliary.compression.model={self.model!r} is not a {self.provider} model, but "
                f"summarizer={self.name} calls the {self.provider} API: name one of its models, pick the "
                "summarizer of that model's provider, or set auxiliary.compression.base_url for a compatible server")
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
        status = getattr(exc, "status_code", None)
        body = getattr(exc, "body", None)
        detail = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        if isinstance(body, dict):
            error = body.get("error", body)
            if isinstance(error, dict):
                kind = error.get("type") or error.get("code")
                detail = f"{kind}: {error.get('message', '')}" if kind else str(error.get("message", detail))
        text = f"{type(exc).__name__}" + (f" {status}" if status else "") + f": {detail}"
        return self._scrub(" ".join(text.split()))[:400]

    # ---- error classes ---------------------------------------------------
    def _classify(self, exc: BaseException) -> str:
        """"retry" | "too_long" | "fatal" | "fail" for one failed attempt."""
        if isinstance(exc, BadReply):
            return "retry"
        if isinstance(exc, ContextTooLong):
            return "too_long"
        if isinstance(exc, AuthOrQuota):
            return "fatal"
        if isinstance(exc, (asyncio.TimeoutError, self._connection_error())):
            return "retry"
        if isinstance(exc, self._status_error()):
            status = getattr(exc, "status_code", 0)
            text = f"{getattr(exc, 'body', '')} {getattr(exc, 'message', '')}"
            if status in AUTH_STATUS or _QUOTA.search(text):
                return "fatal"
            if status == 413 or (status in (400, 422) and _TOO_LONG.search(text)):
                return "too_long"
            if status in RETRY_STATUS:
                return "retry"
        return "fail"

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
    def _max_tokens(self, budget: int) -> int:
        # Budget is a target; leave room so a faithful summary is never cut.
        return min(max(int(budget * 1.5) + 1024, 2048), self.max_output_tokens)

    def _endpoint_down(self, exc: BaseException) -> bool:
        """A failure that says the endpoint itself is unwell (not this request)."""
        status = getattr(exc, "status_code", 0) or 0
        return isinstance(exc, (asyncio.TimeoutError, self._connection_error())) or status >= 500

    def _note_failure(self, exc: BaseException) -> None:
        """Count endpoint failures in a row (all in the loop thread); open the circuit at the limit."""
        if not self._endpoint_down(exc):
            return
        self._failures_in_a_row += 1
        if self._failures_in_a_row >= self.breaker_limit and self._circuit_open is None:
            self._circuit_open = (f"{self.label}: circuit open after {self._failures_in_a_row} connection/"
                                  f"timeout/5xx failures in a row ({self._describe(exc)}); the endpoint is "
                                  "not called again in this run")
            log.error(self._circuit_open)      # said once; each conversation's fallback names it too

    async def _attempt(self, params: dict, tally: _Tally) -> str:
        if self._circuit_open:       # no call, no wait: the request cache was already asked
            raise CircuitOpen(self._circuit_open)
        self._get_client()
        async with self._sem:
            if self._circuit_open:
                raise CircuitOpen(self._circuit_open)
            tally.calls += 1
            try:
                reply = await asyncio.wait_for(self._send(params), self.timeout)
            except Exception as exc:
                self._note_failure(exc)
                kind = self._classify(exc)
                if kind == "too_long":
                    raise ContextTooLong(self._describe(exc)) from exc
                if kind == "fatal":
                    raise AuthOrQuota(self._describe(exc)) from exc
                raise
        self._failures_in_a_row = 0
        tally.add(reply.usage)
        if reply.cut:
            raise BadReply("reply cut off by the output token limit", cut=True)
        text = P.clean_summary(reply.text)
        if not text:
            raise BadReply("empty reply" if not P.strip_think(reply.text or "").strip()
                           else "reply has none of the summary sections")
        return text

    def _wait(self, state) -> float:
        asked = _retry_after(state.outcome.exception())
        if asked is not None:
            return min(asked, self.max_retry_after)
        return self._backoff(state)

    async def _call(self, params: dict, tally: _Tally) -> str:
        params = dict(params)

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
                    return await self._attempt(params, tally)
                except BadReply as exc:
                    if exc.cut:   # more room next time
                        self._grow_max_tokens(params)
                    raise
        raise AssertionError("unreachable")

    def _grow_max_tokens(self, params: dict) -> None:
        for key in ("max_tokens", "max_completion_tokens"):
            if key in params:
                params[key] = min(params[key] * 2, max(self.max_output_tokens, params[key]))

    def _cache_key(self, params: dict) -> str:
        # The endpoint is part of the key: a dry run against a fake or local server must
        # never answer a later run against the real API (same route, model and request).
        return request_key(f"{self.route}@{self.base_url or 'default'}", self.model, params)

    async def _cached_call(self, params: dict, tally: _Tally) -> tuple[str, bool]:
        key = self._cache_key(params)
        hit = self.cache.get(key)
        if hit is not None:
            return hit["text"], True
        text = await self._call(params, tally)
        self.cache.put(key, {"text": text})
        return text, False

    # ---- a whole summary: one call, or split and merged ----------------------
    async def _summarize_async(self, request: SummaryRequest, tally: _Tally):
        """(text, note, cached); note says when the summary was split and merged."""
        budget = int(request.budget_tokens)
        params = self._request(P.build_user_prompt(
            request.middle, budget, request.previous_summary, request.head, self.max_input_chars),
            self._max_tokens(budget))
        key = self._cache_key(params)
        hit = self.cache.get(key)
        if hit is not None:
            return hit["text"], hit.get("note"), True
        try:
            text = await self._call(params, tally)
            note = None
        except ContextTooLong as exc:
            log.warning("%s: %s is too long for one request (%s); splitting",
                        self.label, request.conversation_id, exc)
            try:
                text, note = await self._split_and_merge(request, budget, str(exc), tally)
            except AuthOrQuota:
                raise
            except Exception as inner:
                raise ContextTooLong(f"{exc}; splitting failed: {self._describe(inner)}") from inner
        self.cache.put(key, {"text": text, "note": note})
        return text, note, False

    async def _parts(self, middle: list[dict], budget: int, head: list[dict],
                     tally: _Tally, depth: int) -> list[str]:
        """Leaf summaries of `middle`, oldest first; halves whatever is still too long."""
        if depth > 0:   # depth 0 already failed as a whole
            params = self._request(P.build_user_prompt(middle, budget, None, head, self.max_input_chars),
                                   self._max_tokens(budget))
            try:
                return [(await self._cached_call(params, tally))[0]]
            except ContextTooLong:
                pass
        cut = _split_point(middle)
        if cut is None or 2 ** (depth + 1) > self.max_parts:
            raise ContextTooLong(f"still too long after splitting into {2 ** depth} part(s)")
        halves = await asyncio.gather(
            self._parts(middle[:cut], max(budget // 2, 500), head, tally, depth + 1),
            self._parts(middle[cut:], max(budget // 2, 500), head, tally, depth + 1),
            return_exceptions=True)
        for result in halves:
            if isinstance(result, BaseException):
                raise result
        return halves[0] + halves[1]

    async def _split_and_merge(self, request: SummaryRequest, budget: int, why: str, tally: _Tally):
        parts = await self._parts(request.middle, budget, request.head, tally, 0)
        how = "section-wise"
        text = None
        if self.merge_with_model:
            params = self._request(P.build_merge_prompt(
                parts, budget, request.previous_summary, request.head, request.middle),
                self._max_tokens(budget))
            try:
                text, _ = await self._cached_call(params, tally)
                how = "a merge call"
            except AuthOrQuota:
                raise
            except Exception as exc:   # the parts are good; don't lose them to a failed merge
                log.warning("%s: merge call failed (%s); merging section-wise",
                            self.label, self._describe(exc))
        if text is None:
            previous = [P.clean_text(P.strip_wrapper(request.previous_summary))] if request.previous_summary else []
            text = P.merge_sections(previous + parts)
        return text, f"split-merged: {why}; summarized in {len(parts)} parts, merged by {how}"

    # ---- the seam --------------------------------------------------------
    def summarize(self, request: SummaryRequest) -> SummaryResult:
        if self._fatal:
            raise SummarizerFatalError(self._fatal)
        tally = _Tally(conversation=str(request.conversation_id))
        try:
            text, note, cached = self._run(self._summarize_async(request, tally))
            return SummaryResult(text=text, summarizer=self.label, fallback=note, usage=tally.usage,
                                 calls=tally.calls, retries=tally.retries, cached=cached)
        except SummarizerFatalError:   # e.g. no key: nothing to fall back from
            raise
        except AuthOrQuota as exc:
            message = (f"{self.label}: the provider refused the credentials or quota ({exc}); "
                       f"check {self.key_env} and the account")
            if self.stop_on_auth_error:
                self._fatal = message
                raise SummarizerFatalError(message) from None
            reason = message
        except ContextTooLong as exc:
            reason = f"{self.label}: input too long ({exc})"
        except CircuitOpen as exc:
            reason = str(exc)
        except Exception as exc:
            if self._classify(exc) == "retry":
                reason = f"{self.label}: gave up after {self.attempts} attempts ({self._describe(exc)})"
            else:
                reason = f"{self.label}: request failed ({self._describe(exc)})"
        reason += "; used the embedded extractive summary"
        log.warning("%s: %s", request.conversation_id, reason)
        return self._fallback(request, reason, tally)

    def _fallback(self, request: SummaryRequest, reason: str, tally: _Tally) -> SummaryResult:
        with self._lock:
            if self._extractive is None:
                from hermes_pipeline.summarizers.extractive import ExtractiveSummarizer
                self._extractive = ExtractiveSummarizer(**self.fallback_cfg)
        result = self._extractive.summarize(request)
        return replace(result, fallback=reason, usage=tally.usage, calls=tally.calls,
                       retries=tally.retries, cached=False)

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
        if self._extractive is not None:
            self._extractive.close()
        self.cache.close()


def _split_point(messages: list[dict]) -> int | None:
    """Index near the middle (by size) that keeps tool calls with their results."""
    cuts = [i for i in range(1, len(messages)) if messages[i].get("role") != "tool"]
    if not cuts:
        return None
    sizes = [len(P.render_message(m)) for m in messages]
    half, running, prefix = sum(sizes) / 2, 0, []
    for size in sizes:
        running += size
        prefix.append(running)
    return min(cuts, key=lambda i: abs(prefix[i - 1] - half))


class AnthropicSummarizer(LLMSummarizer):
    provider = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    default_max_output_tokens = 32000

    def __init__(self, cache_ttl: str | None = "5m", **kwargs: Any):
        super().__init__(**kwargs)
        # The instruction block is the same in every call: mark it for prompt caching.
        self.cache_control = {"type": "ephemeral"}
        if str(cache_ttl) == "1h":
            self.cache_control["ttl"] = "1h"

    def _make_client(self, api_key: str):
        import anthropic
        return anthropic.AsyncAnthropic(api_key=api_key, base_url=self.base_url,
                                        max_retries=0, timeout=self.timeout)

    def _request(self, user_prompt: str, max_tokens: int) -> dict:
        return {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": [{"type": "text", "text": P.INSTRUCTIONS, "cache_control": dict(self.cache_control)}],
            "messages": [{"role": "user", "content": user_prompt}],
        }

    async def _send(self, params: dict) -> _Reply:
        response = await self._client.messages.create(**params)
        text = "".join(getattr(block, "text", "") for block in response.content
                       if getattr(block, "type", "") == "text")
        usage = response.usage
        return _Reply(text=text, cut=response.stop_reason == "max_tokens", usage={
            "input_tokens": getattr(usage, "input_tokens", 0) or 0,
            "output_tokens": getattr(usage, "output_tokens", 0) or 0,
            "cache_read_tokens": getattr(usage, "cache_read_input_tokens", 0) or 0,
            "cache_write_tokens": getattr(usage, "cache_creation_input_tokens", 0) or 0,
        })

    def _status_error(self):
        import anthropic
        return anthropic.APIStatusError

    def _connection_error(self):
        import anthropic
        return anthropic.APIConnectionError


class OpenAISummarizer(LLMSummarizer):
    provider = "openai"
    default_key_env = "OPENAI_API_KEY"
    default_max_output_tokens = 16384

    def __init__(self, max_tokens_param: str = "max_tokens", **kwargs: Any):
        super().__init__(**kwargs)
        # Newer OpenAI models want max_completion_tokens; compatible servers want max_tokens.
        self.max_tokens_param = max_tokens_param

    def _make_client(self, api_key: str):
        import openai
        return openai.AsyncOpenAI(api_key=api_key, base_url=self.base_url,
                                  max_retries=0, timeout=self.timeout)

    def _request(self, user_prompt: str, max_tokens: int) -> dict:
        return {
            "model": self.model,
            self.max_tokens_param: max_tokens,
            "messages": [{"role": "system", "content": P.INSTRUCTIONS},
                         {"role": "user", "content": user_prompt}],
        }

    async def _send(self, params: dict) -> _Reply:
        response = await self._client.chat.completions.create(**params)
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice and choice.message else ""
        usage = response.usage
        prompt = getattr(usage, "prompt_tokens", 0) or 0
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", 0) or 0
        # input_tokens excludes cached ones, as Anthropic reports it, so prices add up the same way.
        return _Reply(text=text, cut=bool(choice and choice.finish_reason == "length"), usage={
            "input_tokens": prompt - cached,
            "output_tokens": getattr(usage, "completion_tokens", 0) or 0,
            "cache_read_tokens": cached,
            "cache_write_tokens": 0,
        })

    def _status_error(self):
        import openai
        return openai.APIStatusError

    def _connection_error(self):
        import openai
        return openai.APIConnectionError
