"""The pluggable context engine (SPEC §1)."""
from __future__ import annotations

from abc import ABC, abstractmethod


class ContextEngine(ABC):
    name: str = ""

    @abstractmethod
    def should_compress(self, prompt_tokens: int) -> bool:
        """Whether a prompt of this size should be compacted."""

    @abstractmethod
    def compress(self, messages: list[dict]) -> list[dict]:
        """The compacted messages (a new list; the input is not mutated)."""

    def tools(self) -> list[dict]:
        """Tools an agent could call (e.g. a lossless engine's search); none by default."""
        return []

    def update_from_response(self, usage: dict) -> None:
        """Track the prompt size an API response reported."""
