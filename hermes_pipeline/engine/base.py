"""The pluggable context engine: the only thing the run loop calls.

An engine is built by a factory `factory(services, **options)` (a class is
one): `services` are what every engine may use (budgets, summarizer, token
counter, ...), `options` are the engine's own config node (`context.options`),
so no engine receives keyword arguments meant for another.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_pipeline.config.schema import CompressionConfig
from hermes_pipeline.stages.base import StageTools
from hermes_pipeline.stages.plan import Budgets
from hermes_pipeline.summarizers.base import SummaryResult
from hermes_pipeline.transcript import Conversation


@dataclass
class Outcome:
    """What the run folder records about one conversation's compaction."""
    compacted: bool
    trigger: str                     # "hygiene" | "agent" | "none"
    tokens_before: int
    tokens_after: int
    engine: str = ""
    summary: SummaryResult | None = None
    summary_tokens: int = 0
    noop_reason: str | None = None   # why nothing was compacted, in plain words
    stats: dict[str, int] = field(default_factory=dict)
    quality: dict | None = None      # the deterministic quality score (stages/score.py), when compacted
    extra: dict[str, Any] = field(default_factory=dict)   # engine-specific manifest fields
    fits: bool | None = None         # the written conversation is within the safety net's share (engine/context_fit.py)
    fit_reason: str | None = None    # why it is not, when it is not
    # each stage's counts and CPU seconds, by stage name (stages/chain.py), and the engine's own ("plan")
    stages: dict[str, dict] = field(default_factory=dict)


@dataclass
class Compaction:
    messages: list[dict]             # the conversation to write (the input's own list when unchanged)
    outcome: Outcome
    counts: list[int] | None = None  # tokens of each input message, when the engine counted them (the replay reuses them)


@dataclass(frozen=True)
class EngineServices:
    """What every engine is built with, whatever its own options."""
    budgets: Budgets
    settings: CompressionConfig      # compression.*
    tools: StageTools
    stages: tuple = ()               # the configured stage chain (pipeline.stages)
    enabled: bool = True             # compression.enabled
    hygiene_min_messages: int = 4
    store_dir: Path = Path(".")      # where an engine may keep files (the run folder or output.dir)
    model_name: str = ""             # model.name: what an engine written for Hermes is told it runs on


class ContextEngine(ABC):
    name: str = ""

    @abstractmethod
    def should_compress(self, prompt_tokens: int) -> bool:
        """Whether a prompt of this size should be compacted."""

    @abstractmethod
    def compress(self, conversation: Conversation) -> Compaction:
        """The compacted messages and what happened; never mutates the conversation."""

    def tools(self) -> list[dict]:
        """JSON schemas of tools an agent could call (e.g. a lossless engine's search); none by default."""
        return []

    def update_from_response(self, usage: dict) -> None:
        """Track the prompt size an API response reported."""

    def close(self) -> None:
        """Release files and connections at the end of a run."""
