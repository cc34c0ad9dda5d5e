"""The summarizer seam: turn the middle of a conversation into a structured summary."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

# The structured template of SPEC §4, in order. Subsections belong to Progress.
SECTIONS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Relevant Files",
    "## Next Steps",
    "## Critical Context",
)


@dataclass
class SummaryRequest:
    conversation_id: str
    middle: list[dict]               # the turns to summarize, as they were before pruning
    budget_tokens: int               # target size of the summary
    context_length: int
    previous_summary: str | None = None   # an earlier compaction summary to update
    head: list[dict] = field(default_factory=list)   # verbatim head, for the goal and language
    span: tuple[int, int] | None = None   # the summary replaces messages[start:end] of the conversation
    probes: Any = None               # quality.Probes of this middle, when the run already made them


@dataclass
class SummaryResult:
    text: str                        # the sections, without the compaction wrapper
    summarizer: str                  # who wrote it
    fallback: str | None = None      # why the configured summarizer was not used, if it wasn't
    usage: dict[str, int] = field(default_factory=dict)   # tokens reported by a model
    calls: int = 0                   # requests sent to a model
    retries: int = 0
    cached: bool = False             # answered from the request cache
    estimate: dict | None = None     # dry_run=true: what the configured summarizer would have sent and cost
    via: str | None = None           # a model's summary: "batch" or "call"; "fallback": the embedded one stood in
    batch_items: int = 0             # answers a batch delivered to it (billed at the batch price) ...
    batch_usage: dict[str, int] = field(default_factory=dict)   # ... and their tokens, within `usage`


class Summarizer(ABC):
    name: str = ""

    def check(self) -> None:
        """Fail fast at start-up (missing key, bad endpoint) before any work."""

    @abstractmethod
    def summarize(self, request: SummaryRequest) -> SummaryResult:
        """A summary with every section of SECTIONS; never empty."""

    def close(self) -> None:
        """Release clients and caches at the end of a run."""


class SummarizerFatalError(RuntimeError):
    """An error that must stop the run (bad key, no quota) instead of falling back per conversation."""
