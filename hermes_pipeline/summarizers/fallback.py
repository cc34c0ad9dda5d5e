"""The one fallback: a summarizer that wraps a primary one and the embedded one.

When the primary fails (it raises, raises SummaryFailed saying why, or returns an
empty summary) the embedded extractive summarizer writes the summary, and the
result says why (`fallback`) and what the primary spent trying (tokens, calls,
retries). The middle is never dropped without a summary. Two
things are no failure to fall back from: SummarizerFatalError (401/403/no credit:
the run stops) and batch mode's first pass (Gathered). The summarize stage and the
lcm engine wrap the run's summarizer in it; the LLM summarizers are one (their
primary: summaries from the model).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import replace

from hermes_pipeline.analysis.redact import strip_think
from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.llm.errors import Gathered

log = logging.getLogger(__name__)


class SummaryFailed(Exception):
    """A primary's failure it has already described (and logged): `reason` goes in the row as it is,
    `spent` is what the attempt cost."""

    def __init__(self, reason: str, spent: SummaryResult | None = None):
        super().__init__(reason)
        self.reason, self.spent = reason, spent


class WithFallback(Summarizer):
    """`primary`'s summaries, the embedded summarizer's when it fails."""

    def __init__(self, primary: Summarizer):
        self.primary = primary
        self.name = primary.name
        self._embedded: Summarizer | None = None
        self._lock = threading.Lock()

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        try:
            result = self.primary.summarize(request)
        except (SummarizerFatalError, Gathered):
            raise
        except SummaryFailed as failed:
            return self.fall_back(request, failed.reason, failed.spent)
        except Exception as error:   # any summarizer bug or outage: fall back, and say so
            log.warning("summarizer failed for %s: %s", request.conversation_id, error)
            return self.fall_back(request, f"{type(error).__name__}: {error}")
        if not strip_think(result.text).strip():
            return self.fall_back(request, f"{result.summarizer} returned an empty summary", result)
        return result

    def fall_back(self, request: SummaryRequest, reason: str, spent: SummaryResult | None = None) -> SummaryResult:
        """The embedded summary of `request`, saying why it stood in, billed with what `spent` cost."""
        with self._lock:
            if self._embedded is None:
                from hermes_pipeline.summarizers.embedded.summarizer import ExtractiveSummarizer
                self._embedded = ExtractiveSummarizer()
        result = replace(self._embedded.summarize(request), fallback=reason, via="fallback", cached=False)
        if spent is None:
            return result
        return replace(result, usage=spent.usage, calls=spent.calls, retries=spent.retries,
                       batch_items=spent.batch_items, batch_usage=spent.batch_usage)

    def check(self) -> None:
        self.primary.check()

    def close(self) -> None:
        self.primary.close()
        if self._embedded is not None:
            self._embedded.close()


def with_fallback(summarizer: Summarizer) -> WithFallback:
    """`summarizer` wrapped once: one that already falls back is used as it is."""
    return summarizer if isinstance(summarizer, WithFallback) else WithFallback(summarizer)
