"""The stage contract: `apply(draft, plan) -> Draft`, with the stage's tools given when it is built.

A stage never changes its input draft; it returns a new one, and what it counted
goes in that draft's `counts` (the chain files them under the stage's name, with
the stage's CPU time: the row's `prune.tool_outputs_pruned`, `summarize.seconds`).
Each stage says what it needs from the stages before it and what it provides,
and names its phase of the compaction: the chain is checked when it is built (chain.py).
"""
from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from hermes_pipeline.stages.plan import Plan
from hermes_pipeline.summarizers.base import SummaryResult

if TYPE_CHECKING:
    from hermes_pipeline.analysis.conversation import ConversationAnalysis

# what stages provide and need: the chain starts with SOURCE, and the engine writes OUTPUT
SOURCE = "messages aligned with the plan"
SUMMARY = "summary"
OUTPUT = "assembled conversation"
QUALITY = "quality score"


@dataclass(frozen=True)
class StageTools:
    """Shared components a stage may need; built once per run and given to each stage as it is built."""
    summarizer: Any = None
    counter: Any = None
    caching: Any = None              # CachingPolicy, or None when caching is off



@dataclass(frozen=True)
class Draft:
    """The conversation on its way through the chain.

    Until assembly, `messages` line up with `plan.original` (same length, so
    the plan's head / middle / tail indices hold); after it, `messages` is the
    compacted conversation.
    """
    messages: tuple[dict, ...]
    analysis: "ConversationAnalysis"     # what the conversation holds (probes), made once for it
    summary: SummaryResult | None = None
    quality: dict | None = None          # the score stage's result
    counts: dict = field(default_factory=dict)   # what the stage that made this draft counted

    def but(self, **changes) -> "Draft":
        return replace(self, **changes)


class Stage(ABC):
    name: str = ""
    phase: int = 0          # phase of the compaction: 1 prune, 3 summarize, 4 assemble, 5 cache-mark; 6 score
    needs: frozenset = frozenset()
    provides: frozenset = frozenset()
    keeps_messages_verbatim = True      # fit mode runs only the stages that leave kept messages as they are

    def __init__(self, tools: StageTools | None = None):
        self.tools = tools or StageTools()

    def with_tools(self, tools: StageTools) -> "Stage":
        """This stage with other tools (an engine that wraps the summarizer for one conversation: lcm)."""
        other = copy.copy(self)
        other.tools = tools
        return other

    @abstractmethod
    def apply(self, draft: Draft, plan: Plan) -> Draft:
        """This stage's one job."""
