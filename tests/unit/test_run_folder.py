"""Run totals and the exit status they give: what summary.json and the last line of a run say."""
from __future__ import annotations

from hermes_pipeline.engine.base import Outcome
from hermes_pipeline.run.exit_codes import EXIT_UNHEALTHY, exit_code
from hermes_pipeline.run.run_folder import RunTotals, conversation_row
from hermes_pipeline.summarizers.base import SummaryResult
from hermes_pipeline.transcript import Conversation


def row(status: str, fallback: str | None) -> dict:
    summary = SummaryResult("## Goal\n- x", "extractive" if fallback else "anthropic:claude-sonnet-4-5", fallback)
    outcome = Outcome(status == "compacted", "agent", 9000, 3000 if status == "compacted" else 9000, "compressor",
                      summary, 500, None if status == "compacted" else "compacting would not make it smaller")
    return conversation_row(Conversation(f"c-{status}", [], "chats.jsonl:1"), 5, outcome, 0.1)


def test_a_fallback_in_a_conversation_left_unchanged_is_not_counted_among_the_compacted():
    """An unchanged conversation whose summary fell back (and was then not used) made the run say
    "43 of 42 compacted conversations fell back"."""
    totals = RunTotals()
    failed = "anthropic:claude-sonnet-4-5: request failed (500); used the embedded extractive summary"
    for status, fallback in [("compacted", failed), ("compacted", None), ("unchanged", failed)]:
        totals.add(row(status, fallback))
    summary = totals.summary(1.0, {}, "")
    assert summary["statuses"]["compacted"] == 2 and summary["fallbacks"] == 1
    code, why = exit_code(summary, 0.2, "runs/x")
    assert code == EXIT_UNHEALTHY
    assert why.startswith("summarizer unhealthy: 1 of 2 compacted conversations fell back")
    # only fallbacks: every compacted one, never more than there are
    totals = RunTotals()
    for status in ("compacted", "unchanged", "unchanged"):
        totals.add(row(status, failed))
    assert exit_code(totals.summary(1.0, {}, ""), 0.2, "runs/x")[1].startswith(
        "summarizer unhealthy: 1 of 1 compacted conversations fell back")
