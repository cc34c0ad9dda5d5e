"""The summarizer seam: turn the middle of a conversation into a structured summary."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

# The structured summary's sections, in order. Subsections belong to Progress.
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
    """What a summarizer reads. Its messages are the conversation's own wherever they hold no secret (only
    those that do are redacted copies: analysis/secret_scan.py): a summarizer reads them and never changes
    them."""
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
    """What the run reads of a summarizer is declared here; a summarizer that calls no model keeps the defaults."""
    name: str = ""                          # the manifest's `summarizer`
    model: str | None = None                # the model its summaries come from (None: no model; its prices: none)
    max_in_flight: int = 1                  # requests it keeps in flight: the local runner runs as many threads
    max_fallback_share: float | None = None  # more fallbacks than this share of compactions: exit 4
    calls: Any = None                       # a model's requests (summarizers/llm/calls.py LLMCalls), if it has them

    def check(self) -> None:
        """Fail fast at start-up (missing key, bad endpoint) before any work."""

    @abstractmethod
    def summarize(self, request: SummaryRequest) -> SummaryResult:
        """A summary with every section of SECTIONS; never empty."""

    def close(self) -> None:
        """Release clients and caches at the end of a run."""


class SummarizerFatalError(RuntimeError):
    """An error that must stop the run (bad key, no quota) instead of falling back per conversation."""
