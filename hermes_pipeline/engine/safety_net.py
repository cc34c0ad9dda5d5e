"""The session-hygiene layer: a safety net at a fixed 85% of the context.

It trusts API-reported usage when the transcript has it and a rough character
estimate otherwise, and needs at least `min_messages` messages.
"""
from __future__ import annotations

from hermes_pipeline.tokens import rough_message_tokens


def hygiene_tokens(messages: list[dict], recorded_prompt_tokens: int | None) -> int:
    if recorded_prompt_tokens is not None:
        return recorded_prompt_tokens
    return rough_message_tokens(messages)


def hygiene_fires(messages: list[dict], recorded_prompt_tokens: int | None, limit_tokens: int,
                  min_messages: int, enabled: bool) -> bool:
    if not enabled or len(messages) < min_messages:
        return False
    return hygiene_tokens(messages, recorded_prompt_tokens) >= limit_tokens
