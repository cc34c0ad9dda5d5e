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

    def but(self, **changes) -> "Draft":
        return replace(self, **changes)


class Stage(ABC):
    name: str = ""
    phase: int = 0          # SPEC §4 phase: 1 prune, 3 summarize, 4 assemble, 5 cache-mark

    @abstractmethod
    def apply(self, draft: Draft, plan: Plan, tools: StageTools, stats: Counter) -> Draft:
        """This stage's one job."""
