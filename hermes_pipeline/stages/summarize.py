"""Phase 3: one structured summary of the middle turns.

The configured summarizer gets the unpruned middle (and an earlier summary to
update, if the transcript has one). Whatever it returns is cleaned at this one
boundary: reasoning blocks stripped, secrets redacted. A failing or empty
summary falls back to the embedded summarizer; the middle is never dropped
without a summary (REFERENCE §13).
"""
from __future__ import annotations

import logging

from hermes_pipeline.stages.base import CompactionState, EngineContext, Stage
from hermes_pipeline.summarizers.base import SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.redact import redact_secrets, strip_think
from hermes_pipeline.transcript import is_summary_message

log = logging.getLogger(__name__)


def _embedded_fallback(request: SummaryRequest, why: str, failed: SummaryResult | None) -> SummaryResult:
    from hermes_pipeline.summarizers.extractive import ExtractiveSummarizer
    result = ExtractiveSummarizer().summarize(request)
    result.fallback = why
    if failed is not None:
        result.usage, result.calls, result.retries = failed.usage, failed.calls, failed.retries
    return result


class SummarizeStage(Stage):
    name = "summarize"

    def run(self, state: CompactionState, context: EngineContext) -> None:
        if state.noop_reason:
            return
        middle_range = range(state.head_end, state.tail_start)
        middle = [state.original[i] for i in middle_range if not is_summary_message(state.original[i])]
        content_tokens = sum(state.counts[i] for i in middle_range)
        request = SummaryRequest(
            conversation_id=state.conversation_id,
            middle=middle,
            budget_tokens=state.budgets.summary_tokens(content_tokens),
            context_length=state.budgets.context_length,
            previous_summary=state.previous_summary,
            head=state.original[:state.head_end],
        )
        result: SummaryResult | None = None
        try:
            result = context.summarizer.summarize(request)
        except SummarizerFatalError:
            raise
        except Exception as error:   # any summarizer bug or outage: fall back, and say so
            log.warning("summarizer failed for %s: %s", state.conversation_id, error)
            result = _embedded_fallback(request, f"{type(error).__name__}: {error}", None)
        text = strip_think(result.text).strip()
        if not text:
            result = _embedded_fallback(request, f"{result.summarizer} returned an empty summary", result)
            text = strip_think(result.text).strip()
        result.text = redact_secrets(text)
        state.summary = result
