"""One conversation's analysis: its probes, made once per span and shared by the stages that ask."""
from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_pipeline.analysis.probes import Probes, extract_probes

if TYPE_CHECKING:    # engine/ imports this package
    from hermes_pipeline.engine.plan import Plan


class ConversationAnalysis:
    """Made when a conversation's compaction starts, dropped with it."""

    def __init__(self):
        self._probes: dict[tuple[int, int], Probes] = {}

    def probes(self, plan: "Plan") -> Probes:
        """The quality probes of the plan's middle (a refitted plan with another middle gets its own)."""
        span = (plan.head_end, plan.tail_start)
        if span not in self._probes:
            # every distinct error is kept here: the summarizer wants them all, the score the last few
            self._probes[span] = extract_probes(list(plan.original), range(*span), max_errors=None)
        return self._probes[span]
