"""Phase 3: one structured summary of the middle turns.

The configured summarizer gets the unpruned middle (and an earlier summary to
update, if the transcript has one). Whatever it returns is cleaned at this one
boundary: reasoning blocks stripped, secrets redacted, and no word holding a
fragment of a secret the conversation shows is let through (a "name" split out
of a key at its dashes). The summarizer itself reads the turns redacted, so no
name or identifier it gathers is a piece of a secret. A failing or empty
summary falls back to the embedded summarizer; the middle is never dropped
without a summary (REFERENCE §13). A model's summary is checked against the
artifact trail of the middle (files changed, last errors) and gets an
"Artifact Trail" section naming what it left out, within its budget.
"""
from __future__ import annotations

import logging
from collections import Counter

from hermes_pipeline.artifacts import string_leaves
from hermes_pipeline.engine.base import StageTools
from hermes_pipeline.engine.plan import Plan
from hermes_pipeline.stages.base import Draft, Stage, probes_of
from hermes_pipeline.summarizers.base import SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.redact import redact_deep, redact_secrets, secrets_in, strip_think, without_fragments
from hermes_pipeline.summarizers.trail import artifact_trail_patch
from hermes_pipeline.transcript import is_summary_message

log = logging.getLogger(__name__)
EXTRACTIVE = "extractive"    # the embedded summarizer: it writes the artifact trail itself


def embedded_fallback(request: SummaryRequest, why: str, failed: SummaryResult | None) -> SummaryResult:
    from hermes_pipeline.summarizers.extractive import ExtractiveSummarizer
    result = ExtractiveSummarizer().summarize(request)
    result.fallback = why
    if failed is not None:
        result.usage, result.calls, result.retries = failed.usage, failed.calls, failed.retries
    return result


TRAIL_ROOM = 0.20    # share of the summary budget the Artifact Trail may add to a model summary that filled it


class SummarizeStage(Stage):
    name = "summarize"
    phase = 3

    def apply(self, draft: Draft, plan: Plan, tools: StageTools, stats: Counter) -> Draft:
        if not plan.middle:     # the fit step only cleared head and tail tool outputs: nothing to summarize
            return draft
        probes = probes_of(draft, plan)     # made once: the embedded summarizer, the guard and the score use them
        request = SummaryRequest(
            conversation_id=plan.conversation_id,
            middle=[redact_deep(m) for m in plan.middle if not is_summary_message(m)],
            budget_tokens=plan.summary_tokens,
            context_length=plan.budgets.context_length,
            previous_summary=plan.previous_summary and redact_secrets(plan.previous_summary),
            head=[redact_deep(m) for m in plan.original[:plan.head_end]],
            span=(plan.head_end, plan.tail_start),
            probes=probes,
        )
        try:
            result = tools.summarizer.summarize(request)
        except SummarizerFatalError:
            raise
        except Exception as error:   # any summarizer bug or outage: fall back, and say so
            log.warning("summarizer failed for %s: %s", plan.conversation_id, error)
            result = embedded_fallback(request, f"{type(error).__name__}: {error}", None)
        text = strip_think(result.text).strip()
        if not text:
            result = embedded_fallback(request, f"{result.summarizer} returned an empty summary", result)
            text = strip_think(result.text).strip()
        if result.summarizer != EXTRACTIVE:   # a model wrote it: add what it left out of the artifact trail
            # a model's length is a target, not a limit (it may write past it): whatever it wrote, the trail
            # has TRAIL_ROOM of the budget beyond its text
            room = max(request.budget_tokens,
                       tools.counter.count_text(text) + int(TRAIL_ROOM * request.budget_tokens))
            text, missed = artifact_trail_patch(text, probes, room, tools.counter)
            added = sum(len(items) for kind, items in missed.items() if kind != "left_out") - missed["left_out"]
            if added:
                stats["artifact_trail_items_added"] += added
            if missed["left_out"]:
                stats["artifact_trail_items_left_out"] += missed["left_out"]
        result.text = without_fragments(redact_secrets(text), secrets_in(string_leaves(list(plan.original))))
        return draft.but(summary=result, probes=probes)
