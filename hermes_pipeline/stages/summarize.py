"""Phase 3: one structured summary of the middle turns.

The configured summarizer gets the unpruned middle (and an earlier summary to
update, if the transcript has one). Whatever it returns is cleaned at this one
boundary: reasoning blocks stripped, secrets redacted, and no word holding a
fragment of a secret the conversation shows is let through (a "name" split out
of a key at its dashes). The summarizer itself reads the turns redacted, so no
name or identifier it gathers is a piece of a secret; the conversation's secrets
are found once (analysis/secret_scan.py), and only the turns that hold one are
copied to be redacted. A failing or empty
summary falls back to the embedded summarizer (summarizers/fallback.py); the
middle is never dropped without a summary. A model's summary is checked against the
artifact trail of the middle (files changed, last errors) and gets an
"Artifact Trail" section naming what it left out, within its budget.
"""
from __future__ import annotations

from collections import Counter

from hermes_pipeline.analysis.redact import redact_secrets, strip_think
from hermes_pipeline.stages.base import SUMMARY, Draft, Stage
from hermes_pipeline.stages.plan import Plan
from hermes_pipeline.summarizers.base import SummaryRequest
from hermes_pipeline.summarizers.fallback import with_fallback
from hermes_pipeline.summarizers.llm.artifact_trail import artifact_trail_patch
from hermes_pipeline.transcript import is_summary_message

EXTRACTIVE = "extractive"    # the embedded summarizer: it writes the artifact trail itself
TRAIL_ROOM = 0.20    # share of the summary budget the Artifact Trail may add to a model summary that filled it


class SummarizeStage(Stage):
    name = "summarize"
    phase = 3
    provides = frozenset({SUMMARY})

    def apply(self, draft: Draft, plan: Plan) -> Draft:
        if not plan.middle:     # the fit step only cleared head and tail tool outputs: nothing to summarize
            return draft
        tools, stats = self.tools, Counter()
        probes = draft.analysis.probes(plan)     # the embedded summarizer, the guard and the score share them
        secrets = draft.analysis.secrets(plan)
        request = SummaryRequest(
            conversation_id=plan.conversation_id,
            middle=[secrets.clean(m) for m in plan.middle if not is_summary_message(m)],
            budget_tokens=plan.summary_tokens,
            context_length=plan.budgets.context_length,
            previous_summary=plan.previous_summary and redact_secrets(plan.previous_summary),
            head=[secrets.clean(m) for m in plan.original[:plan.head_end]],
            span=(plan.head_end, plan.tail_start),
            probes=probes,
        )
        result = with_fallback(tools.summarizer).summarize(request)
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
        result.text = secrets.summary(text)
        return draft.but(summary=result, counts=stats)
