"""One conversation's analysis: its probes, made once per span and shared by the stages that ask, and the
memo of what was read off its texts (text_memo.py), both dropped with it."""
from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_pipeline.analysis.probes import Probes, extract_probes
from hermes_pipeline.analysis.text_memo import TextMemo

if TYPE_CHECKING:    # engine/ imports this package
    from hermes_pipeline.engine.plan import Plan


class ConversationAnalysis:
    """Made when a conversation's compaction starts, dropped with it."""

    def __init__(self):
        self._probes: dict[tuple[int, int], Probes] = {}
        self.texts = TextMemo()       # `with analysis.texts:` while the conversation is compacted

    def probes(self, plan: "Plan") -> Probes:
        """The quality probes of the plan's middle (a refitted plan with another middle gets its own)."""
        span = (plan.head_end, plan.tail_start)
        if span not in self._probes:
            # every distinct error is kept here: the summarizer wants them all, the score the last few
            self._probes[span] = extract_probes(list(plan.original), range(*span), max_errors=None)
        return self._probes[span]
