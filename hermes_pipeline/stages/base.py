"""The stage interface: a transform of one draft, guided by a frozen plan.

A stage never changes its input draft; it returns a new one, and counts what
it did in `stats` (merged into the manifest row). Each stage names its SPEC
phase, so a chain in the wrong order is refused when the engine is built.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, replace

from hermes_pipeline.engine.base import StageTools
from hermes_pipeline.engine.plan import Plan
from hermes_pipeline.quality import Probes, extract_probes
from hermes_pipeline.summarizers.base import SummaryResult


@dataclass(frozen=True)
class Draft:
    """The conversation on its way through the chain.

    Until assembly, `messages` line up with `plan.original` (same length, so
    the plan's head / middle / tail indices hold); after it, `messages` is the
    compacted conversation.
    """
    messages: tuple[dict, ...]
    summary: SummaryResult | None = None
    assembled: bool = False
    probes: Probes | None = None     # what the removed middle held (computed once, by the first stage asking)
    quality: dict | None = None      # the quality stage's score

    def but(self, **changes) -> "Draft":
        return replace(self, **changes)


def probes_of(draft: Draft, plan: Plan) -> Probes:
    """The quality probes of the plan's middle, from the draft when a stage already made them."""
    if draft.probes is not None:
        return draft.probes
    # every distinct error is kept here: the summarizer wants them all, the score the last few
    return extract_probes(list(plan.original), range(plan.head_end, plan.tail_start), max_errors=None)


class Stage(ABC):
    name: str = ""
    phase: int = 0          # SPEC §4 phase: 1 prune, 3 summarize, 4 assemble, 5 cache-mark; 6 quality

    @abstractmethod
    def apply(self, draft: Draft, plan: Plan, tools: StageTools, stats: Counter) -> Draft:
        """This stage's one job."""
