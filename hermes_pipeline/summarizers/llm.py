"""The shared LLM summarizer: what a summary takes beyond one request (LLMCalls).

- "input too long" -> split the middle, summarize the parts, merge them;
- anything else that fails -> the embedded extractive summary, with the reason
  in `SummaryResult.fallback`; auth/quota errors stop the run instead.
The providers: summarizers/anthropic.py and summarizers/openai.py.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from hermes_pipeline.summarizers import prompt as P
from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.digest import digest_middle
from hermes_pipeline.summarizers.llm_calls import LLMCalls, Tally
from hermes_pipeline.summarizers.llm_errors import AuthOrQuota, CircuitOpen, ContextTooLong, Gathered

log = logging.getLogger(__name__)


class LLMSummarizer(LLMCalls, Summarizer):
    """Summaries over LLMCalls: split-and-merge for long inputs, the extractive fallback."""

    def __init__(self, stop_on_auth_error: bool = True, max_input_chars: int | None = P.INPUT_CAP,
                 split: dict | None = None, fallback_cfg: dict | None = None,
                 max_fallback_share: float = 0.2, input: str = "digest", **kwargs: Any):
        super().__init__(**kwargs)
        split = dict(split or {})
        self.input = input      # digest: long tool outputs go as their digest (summarizers/digest.py); full
        self.stop_on_auth_error = bool(stop_on_auth_error)
        self.max_input_chars = int(max_input_chars) if max_input_chars else None
        self.max_parts = max(2, int(split.get("max_parts", 16)))
        self.merge_with_model = split.get("merge", "model") == "model"
        self.fallback_cfg = dict(fallback_cfg or {})
        self.max_fallback_share = float(max_fallback_share)   # read by the run: exit 4 above it
        self._fatal: str | None = None
        self._extractive = None

    def _max_tokens(self, budget: int) -> int:
        # Budget is a target; leave room so a faithful summary is never cut.
        return min(max(int(budget * 1.5) + 1024, 2048), self.max_output_tokens)

    def as_sent(self, request: SummaryRequest) -> SummaryRequest:
        """The request as the model reads it: long tool outputs as their digests with summarizer.input=digest."""
        if self.input == "digest":
            return replace(request, middle=digest_middle(request.middle, request.probes))
        return request

    def user_prompt(self, request: SummaryRequest) -> str:
        """The one user message of a whole-middle summary request (a dry run prices this very text)."""
        return P.build_user_prompt(request.middle, int(request.budget_tokens), request.previous_summary,
                                   request.head, self.max_input_chars)

    # ---- a whole summary: one call, or split and merged ----------------------
    async def _summarize_async(self, request: SummaryRequest, tally: Tally):
        """(text, note, cached, via); note says when the summary was split and merged, via how an answer
        from the request cache was first got (a batch, a call)."""
        request = self.as_sent(request)
        budget = int(request.budget_tokens)
        params = self._request(self.user_prompt(request), self._max_tokens(budget))
        key = self._cache_key(params)
        hit = self._lookup(key, tally)
        if hit is not None and "text" in hit:
            return hit["text"], hit.get("note"), not hit.get("fresh"), hit.get("via", "call")
        try:
            if hit is not None:           # a batch found it too long: split without asking again
                raise ContextTooLong(hit["too_long"])
            text = await self._call(params, tally, key=key)
            note = None
        except ContextTooLong as exc:
            # said by the run proper; batch mode's first passes meet it again each round
            log.log(logging.WARNING if self._gathering is None else logging.DEBUG,
                    "%s: %s is too long for one request (%s); splitting", self.label, request.conversation_id, exc)
            try:
                text, note = await self._split_and_merge(request, budget, str(exc), tally)
            except AuthOrQuota:
                raise
            except Exception as inner:
                raise ContextTooLong(f"{exc}; splitting failed: {self._describe(inner)}") from inner
        if self._gathering is None:      # a first pass's merge is the run proper's to bill and keep
            self.cache.put(key, {"text": text, "note": note})
        return text, note, False, None

    async def _parts(self, middle: list[dict], budget: int, head: list[dict],
                     tally: Tally, depth: int) -> list[str]:
        """Leaf summaries of `middle`, oldest first; halves whatever is still too long."""
        if depth > 0:   # depth 0 already failed as a whole
            params = self._request(P.build_user_prompt(middle, budget, None, head, self.max_input_chars),
                                   self._max_tokens(budget))
            try:
                return [(await self._cached_call(params, tally, split=True))[0]]
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

    async def _split_and_merge(self, request: SummaryRequest, budget: int, why: str, tally: Tally):
        parts = await self._parts(request.middle, budget, request.head, tally, 0)
        how = "section-wise"
        text = None
        if self.merge_with_model:
            params = self._request(P.build_merge_prompt(
                parts, budget, request.previous_summary, request.head, request.middle),
                self._max_tokens(budget))
            try:
                text, _ = await self._cached_call(params, tally, split=True)
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
        tally = Tally(conversation=str(request.conversation_id))
        circuit_open = False
        try:
            text, note, cached, via = self._run(self._summarize_async(request, tally))
            if self._gathering is not None:     # batch mode's first pass: all it needed was answered
                raise Gathered()
            via = "batch" if tally.batch_items and not tally.calls else via or "call"
            return SummaryResult(text=text, summarizer=self.label, fallback=note, usage=tally.usage,
                                 calls=tally.calls, retries=tally.retries, cached=cached, via=via,
                                 batch_items=tally.batch_items, batch_usage=tally.batch_usage)
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
            reason, circuit_open = str(exc), True
        except Exception as exc:
            if self._classify(exc) == "retry":
                reason = f"{self.label}: gave up after {self.attempts} attempts ({self._describe(exc)})"
            else:
                reason = f"{self.label}: request failed ({self._describe(exc)})"
        if self._gathering is not None:         # the run itself will fall back, and say why
            raise Gathered()
        reason += "; used the embedded extractive summary"
        # once the circuit is open it was said once, at error level; each fallback after it is in the manifest
        log.log(logging.DEBUG if circuit_open else logging.WARNING, "%s: %s",
                request.conversation_id, reason)
        return self._fallback(request, reason, tally)

    def _fallback(self, request: SummaryRequest, reason: str, tally: Tally) -> SummaryResult:
        with self._lock:
            if self._extractive is None:
                from hermes_pipeline.summarizers.extractive import ExtractiveSummarizer
                self._extractive = ExtractiveSummarizer(**self.fallback_cfg)
        result = self._extractive.summarize(request)
        return replace(result, fallback=reason, usage=tally.usage, calls=tally.calls, retries=tally.retries,
                       cached=False, via="fallback", batch_items=tally.batch_items, batch_usage=tally.batch_usage)

    def close(self) -> None:
        super().close()
        if self._extractive is not None:
            self._extractive.close()


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
