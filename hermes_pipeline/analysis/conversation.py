"""One conversation's analysis: its probes, made once per span and shared by the stages that ask, where its
secrets are (secret_scan.py), and the memo of what was read off its texts (text_memo.py), all dropped with it."""
from __future__ import annotations

from typing import Protocol

from hermes_pipeline.analysis.probes import Probes, extract_probes
from hermes_pipeline.analysis.secret_scan import SecretScan
from hermes_pipeline.analysis.text_memo import TextMemo


class Span(Protocol):
    """A compaction plan as far as the analysis reads it (stages/plan.py Plan): the conversation and its middle."""
    original: tuple[dict, ...]
    head_end: int
    tail_start: int


class ConversationAnalysis:
    """Made when a conversation's compaction starts, dropped with it."""

    def __init__(self):
        self._probes: dict[tuple[int, int], Probes] = {}
        self._secrets: tuple[tuple[dict, ...], SecretScan] | None = None
        self.texts = TextMemo()       # `with analysis.texts:` while the conversation is compacted

    def probes(self, plan: Span) -> Probes:
        """The quality probes of the plan's middle (a refitted plan with another middle gets its own)."""
        span = (plan.head_end, plan.tail_start)
        if span not in self._probes:
            # every distinct error is kept here: the summarizer wants them all, the score the last few
            self._probes[span] = extract_probes(list(plan.original), range(*span), max_errors=None)
        return self._probes[span]

    def secrets(self, plan: Span) -> SecretScan:
        """Where the secrets of the plan's messages are; found once for all the plans made of them."""
        if self._secrets is None or self._secrets[0] is not plan.original:
            self._secrets = (plan.original, SecretScan(plan.original))
        return self._secrets[1]
