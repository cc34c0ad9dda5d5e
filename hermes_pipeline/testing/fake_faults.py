"""Faults the fake provider can be scripted with: one misbehaviour for one request."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# Kinds that answer 200 (possibly late); every other kind is an HTTP error.
_NON_ERROR_KINDS = {"hang", "latency", "truncated", "empty", "garbled"}
ERROR_KINDS = {
    "rate_limit",
    "server_error",
    "overloaded",
    "context_length",
    "auth_error",
    "forbidden",
    "insufficient_quota",
}


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, applied to exactly one request."""

    kind: str
    status: int | None = None  # overrides the HTTP status for error kinds
    retry_after: float | None = None  # seconds, sent as the retry-after header
    seconds: float = 0.0  # delay for hang / latency
    limit_tokens: int | None = None  # context window quoted by context_length

    def __post_init__(self) -> None:
        if self.kind not in ERROR_KINDS | _NON_ERROR_KINDS:
            raise ValueError(f"unknown fault kind: {self.kind!r}")


def rate_limit(retry_after: float | None = 1) -> Fault:
    """429 with a retry-after header (omitted when retry_after is None)."""
    return Fault("rate_limit", retry_after=retry_after)


def server_error(status: int = 500) -> Fault:
    """5xx with the provider's server-error body."""
    if status not in (500, 502, 503, 504):
        raise ValueError("server_error status must be 500, 502, 503 or 504")
    return Fault("server_error", status=status)


def overloaded(status: int | None = None) -> Fault:
    """Anthropic: 529 overloaded_error. OpenAI has no 529, so it gets 503 unless status is given."""
    return Fault("overloaded", status=status)


def context_length(limit_tokens: int | None = None) -> Fault:
    """400 with the provider's prompt-too-long / context_length_exceeded body."""
    return Fault("context_length", limit_tokens=limit_tokens)


def auth_error() -> Fault:
    """401 authentication_error / invalid_api_key."""
    return Fault("auth_error")


def forbidden() -> Fault:
    """403 permission_error / request_forbidden."""
    return Fault("forbidden")


def insufficient_quota() -> Fault:
    """OpenAI: 429 insufficient_quota. Anthropic: 400 'credit balance is too low'."""
    return Fault("insufficient_quota")


def hang(seconds: float) -> Fault:
    """Wait `seconds` before answering normally, so a shorter client timeout fires."""
    return Fault("hang", seconds=seconds)


def latency(seconds: float) -> Fault:
    """Answer normally after an extra `seconds`."""
    return Fault("latency", seconds=seconds)


def truncated() -> Fault:
    """200 cut short: stop_reason max_tokens / finish_reason length."""
    return Fault("truncated")


def empty() -> Fault:
    """200 whose text is whitespace only."""
    return Fault("empty")


def garbled() -> Fault:
    """200 whose text is prose: no summary sections, no JSON (a model that did not answer as asked)."""
    return Fault("garbled")


def as_fault(item: Fault | Mapping[str, Any] | str | None) -> Fault | None:
    """Script entries may be Fault objects, dicts, bare kind names, or None (= normal)."""
    if item is None or isinstance(item, Fault):
        return item
    if isinstance(item, str):
        return Fault(item)
    if isinstance(item, Mapping):
        return Fault(**item)
    raise TypeError(f"cannot use {item!r} as a fault")
