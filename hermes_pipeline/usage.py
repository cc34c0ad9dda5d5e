"""The one reader of API-reported usage blocks (Anthropic and OpenAI shapes).

Anthropic reports `input_tokens` (uncached), `cache_creation_input_tokens`,
`cache_read_input_tokens` and `output_tokens`; OpenAI reports `prompt_tokens`
(cached ones included, `prompt_tokens_details.cached_tokens` of them) and
`completion_tokens`; pi logs `input`, `cacheWrite`, `cacheRead`, `output` and
`totalTokens`. All become one `Billed` record, the way prices add up.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class Billed:
    input_tokens: int = 0          # uncached input
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt: what the model saw before answering."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def billed(usage: Any) -> Billed | None:
    """The billed tokens of one usage block, or None if it isn't one."""
    if not isinstance(usage, dict):
        return None
    if isinstance(usage.get("input_tokens"), int):
        return Billed(_int(usage["input_tokens"]), _int(usage.get("cache_creation_input_tokens")),
                      _int(usage.get("cache_read_input_tokens")), _int(usage.get("output_tokens")))
    if isinstance(usage.get("prompt_tokens"), int):
        details = usage.get("prompt_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
        return Billed(_int(usage["prompt_tokens"]) - cached, 0, cached, _int(usage.get("completion_tokens")))
    if isinstance(usage.get("input"), int):    # pi
        return Billed(_int(usage["input"]), _int(usage.get("cacheWrite")), _int(usage.get("cacheRead")),
                      _int(usage.get("output")))
    return None


def prompt_tokens(usage: Any) -> int | None:
    """Size of the prompt a response reports (cache reads and writes included)."""
    found = billed(usage)
    return found.prompt_tokens if found else None


def context_tokens(usage: Any) -> int | None:
    """Size of the conversation after that response: its prompt plus the reply."""
    if isinstance(usage, dict) and _int(usage.get("totalTokens")) > 0:    # pi's own total
        return usage["totalTokens"]
    found = billed(usage)
    return found.prompt_tokens + found.output_tokens if found else None


def last_context_tokens(usages: list[Any]) -> int | None:
    """The newest usage block's context size (the last one that parses)."""
    for usage in reversed(usages):
        tokens = context_tokens(usage)
        if tokens is not None:
            return tokens
    return None


def reported(usage: Any) -> dict[str, int]:
    """The billed tokens of an SDK response's usage (a pydantic model or a dict); zeros when absent."""
    if hasattr(usage, "model_dump"):
        usage = usage.model_dump()
    return (billed(usage) or Billed()).to_dict()
