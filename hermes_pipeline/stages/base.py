"""What every stage shares: the state passed along the chain, and the Stage interface."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from hermes_pipeline.budget import Budgets
from hermes_pipeline.summarizers.base import SummaryResult


@dataclass(frozen=True)
class Settings:
    """The compression knobs the stages read (from `compression.*`)."""
    protect_first_n: int = 3
    protect_last_n: int = 20
    prune_min_chars: int = 200
    keep_images: int = 3
    max_tool_arg_chars: int = 1500


@dataclass
class CompactionState:
    conversation_id: str
    original: list[dict]            # the input messages; never mutated
    counts: list[int]               # exact tokens of each original message
    budgets: Budgets
    settings: Settings
    messages: list[dict] = field(default_factory=list)   # working copy that prune edits
    head_end: int | None = None     # middle = [head_end, tail_start)
    tail_start: int | None = None
    summary_role: str | None = None
    previous_summary: str | None = None
    summary: SummaryResult | None = None
    output: list[dict] | None = None
    noop_reason: str | None = None  # why nothing was compacted
    stats: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        if not self.messages:
            self.messages = list(self.original)

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n


@dataclass
class EngineContext:
    """Shared components a stage may need; built once per run."""
    summarizer: Any = None
    counter: Any = None
    caching: Any = None             # CachingPolicy or None when off


class Stage(ABC):
    name: str = ""

    @abstractmethod
    def run(self, state: CompactionState, context: EngineContext) -> None:
        """Advance the state by this stage's one job."""
