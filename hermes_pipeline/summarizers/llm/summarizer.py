"""The shared LLM summarizer: what a summary takes beyond one request (an LLMCalls).

- "input too long" -> split the middle, summarize the parts, merge them;
- anything else that fails -> the embedded extractive summary (summarizers/fallback.py),
  with the reason in `SummaryResult.fallback`; auth/quota errors stop the run instead.
The providers' requests: summarizers/llm/anthropic.py and summarizers/llm/openai.py.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from hermes_pipeline.config.schema import LLMSummarizerConfig as Options
from hermes_pipeline.config.schema import SplitConfig, filled
from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.fallback import SummaryFailed, WithFallback
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.summarizers.llm.calls import LLMCalls, Tally
from hermes_pipeline.summarizers.llm.digest import digest_middle
from hermes_pipeline.summarizers.llm.errors import AuthOrQuota, CircuitOpen, ContextTooLong, Gathered

log = logging.getLogger(__name__)


class ModelSummarizer(Summarizer):
    """Summaries from a model over its provider's requests (`calls`): split-and-merge for long inputs.
    A failure raises SummaryFailed saying why; WithFallback has the embedded summarizer write instead."""

    def __init__(self, calls: LLMCalls, stop_on_auth_error: bool, max_input_chars: int | None, split: dict,
                 input: str):
        self.calls = calls
        self.name = calls.name
        self.input = input      # digest: long tool outputs go as their digest (summarizers/llm/digest.py); full
        self.stop_on_auth_error = bool(stop_on_auth_error)
        self.max_input_chars = int(max_input_chars) if max_input_chars else None
        self.max_parts = max(2, int(split["max_parts"]))
        self.merge_with_model = split["merge"] == "model"
        self._fatal: str | None = None

    def _max_tokens(self, budget: int) -> int:
        # Budget is a target; leave room so a faithful summary is never cut.
        return min(max(int(budget * 1.5) + 1024, 2048), self.calls.max_output_tokens)

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
        params = self.calls._request(self.user_prompt(request), self._max_tokens(budget))
        key = self.calls._cache_key(params)
        hit = self.calls._lookup(key, tally)
        if hit is not None and "text" in hit:
            return hit["text"], hit.get("note"), not hit.get("fresh"), hit.get("via", "call")
        try:
            if hit is not None:           # a batch found it too long: split without asking again
                raise ContextTooLong(hit["too_long"])
            text = await self.calls._call(params, tally, key=key)
            note = None
        except ContextTooLong as exc:
            # said by the run proper; batch mode's first passes meet it again each round
            log.log(logging.WARNING if self.calls._gathering is None else logging.DEBUG,
                    "%s: %s is too long for one request (%s); splitting", self.calls.label,
                    request.conversation_id, exc)
            try:
                text, note = await self._split_and_merge(request, budget, str(exc), tally)
            except AuthOrQuota:
                raise
            except Exception as inner:
                raise ContextTooLong(f"{exc}; splitting failed: {self.calls._describe(inner)}") from inner
        if self.calls._gathering is None:      # a first pass's merge is the run proper's to bill and keep
            self.calls.cache.put(key, {"text": text, "note": note})
        return text, note, False, None

    async def _parts(self, middle: list[dict], budget: int, head: list[dict],
                     tally: Tally, depth: int) -> list[str]:
        """Leaf summaries of `middle`, oldest first; halves whatever is still too long."""
        if depth > 0:   # depth 0 already failed as a whole
            params = self.calls._request(P.build_user_prompt(middle, budget, None, head, self.max_input_chars),
                                   self._max_tokens(budget))
            try:
                return [(await self.calls._cached_call(params, tally, split=True))[0]]
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
            params = self.calls._request(P.build_merge_prompt(
                parts, budget, request.previous_summary, request.head, request.middle),
                self._max_tokens(budget))
            try:
                text, _ = await self.calls._cached_call(params, tally, split=True)
                how = "a merge call"
            except AuthOrQuota:
                raise
            except Exception as exc:   # the parts are good; don't lose them to a failed merge
                log.warning("%s: merge call failed (%s); merging section-wise",
                            self.calls.label, self.calls._describe(exc))
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
            text, note, cached, via = self.calls._run(self._summarize_async(request, tally))
            if self.calls._gathering is not None:     # batch mode's first pass: all it needed was answered
                raise Gathered()
            via = "batch" if tally.batch_items and not tally.calls else via or "call"
            return SummaryResult(text=text, summarizer=self.calls.label, fallback=note, usage=tally.usage,
                                 calls=tally.calls, retries=tally.retries, cached=cached, via=via,
                                 batch_items=tally.batch_items, batch_usage=tally.batch_usage)
        except SummarizerFatalError:   # e.g. no key: nothing to fall back from
            raise
        except AuthOrQuota as exc:
            message = (f"{self.calls.label}: the provider refused the credentials or quota ({exc}); "
                       f"check {self.calls.key_env} and the account")
            if self.stop_on_auth_error:
                self._fatal = message
                raise SummarizerFatalError(message) from None
            reason = message
        except ContextTooLong as exc:
            reason = f"{self.calls.label}: input too long ({exc})"
        except CircuitOpen as exc:
            reason, circuit_open = str(exc), True
        except Exception as exc:
            calls = self.calls
            if calls._classify(exc) == "retry":
                reason = f"{calls.label}: gave up after {calls.attempts} attempts ({calls._describe(exc)})"
            else:
                reason = f"{calls.label}: request failed ({calls._describe(exc)})"
        if self.calls._gathering is not None:         # the run itself will fall back, and say why
            raise Gathered()
        reason += "; used the embedded extractive summary"
        # once the circuit is open it was said once, at error level; each fallback after it is in the manifest
        log.log(logging.DEBUG if circuit_open else logging.WARNING, "%s: %s",
                request.conversation_id, reason)
        raise SummaryFailed(reason, SummaryResult(
            text="", summarizer=self.calls.label, usage=tally.usage, calls=tally.calls, retries=tally.retries,
            batch_items=tally.batch_items, batch_usage=tally.batch_usage))

    def check(self) -> None:
        self.calls.check()

    def close(self) -> None:
        self.calls.close()


class LLMSummarizer(WithFallback):
    """An LLM summarizer as a run configures it (summarizer=anthropic|openai): the model's summaries
    (ModelSummarizer over the provider's requests, `calls_class`), the embedded one's when they fail.
    Options not its own go to the requests (LLMCalls); defaults are the schema's."""

    calls_class: type[LLMCalls] = LLMCalls

    def __init__(self, stop_on_auth_error: bool = Options.stop_on_auth_error,
                 max_input_chars: int | None = Options.max_input_chars, split: dict | None = None,
                 max_fallback_share: float = Options.max_fallback_share, input: str = Options.input,
                 **call_options: Any):
        self.calls = self.calls_class(**call_options)
        self.model_summaries = ModelSummarizer(self.calls, stop_on_auth_error, max_input_chars,
                                               filled(SplitConfig, split), input)
        super().__init__(self.model_summaries)
        self.max_fallback_share = float(max_fallback_share)   # read by the run: exit 4 above it

    # what the run reads of it
    @property
    def label(self) -> str:
        return self.calls.label

    @property
    def model(self) -> str:
        return self.calls.model

    @property
    def max_in_flight(self) -> int:
        return self.calls.max_in_flight


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
