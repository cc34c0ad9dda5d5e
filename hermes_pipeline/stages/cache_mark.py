"""Phase 5: Anthropic prompt-cache breakpoints, strategy system_and_3.

At most 4 breakpoints: the system prompt and the last three non-system
messages. Stale markers are stripped first, so applying twice gives the same
result, and the caller's messages are never mutated.
"""
from __future__ import annotations

from dataclasses import dataclass

from hermes_pipeline.stages.base import OUTPUT, Draft, Stage
from hermes_pipeline.stages.plan import Plan
from hermes_pipeline.transcript import role, strip_cache_control

CACHING_PROVIDERS = {"anthropic": "Anthropic", "openrouter": "OpenRouter"}
WINDOW = 3


@dataclass(frozen=True)
class CachingPolicy:
    enabled: bool
    ttl: str
    native_anthropic: bool
    reason: str

    def status_line(self) -> str:
        state = "ENABLED" if self.enabled else "DISABLED"
        detail = f"{self.reason}, {self.ttl} TTL" if self.enabled else self.reason
        return f"Prompt caching: {state} ({detail})"

    def marker(self) -> dict:
        return {"type": "ephemeral", "ttl": "1h"} if self.ttl == "1h" else {"type": "ephemeral"}


def caching_policy(model_name: str, provider: str, enabled, ttl: str) -> CachingPolicy:
    """The auto rule: a Claude model on a provider that takes cache_control."""
    is_claude = "claude" in model_name.lower()
    provider_label = CACHING_PROVIDERS.get(provider.lower())
    native = provider.lower() == "anthropic"
    if enabled is True:
        return CachingPolicy(True, ttl, native, f"forced on for {model_name} via {provider}")
    if enabled is False:
        return CachingPolicy(False, ttl, native, "turned off by prompt_caching.enabled=false")
    if is_claude and provider_label:
        return CachingPolicy(True, ttl, native, f"Claude via {provider_label}")
    why = "not a Claude model" if not is_claude else f"provider {provider} does not support cache_control"
    return CachingPolicy(False, ttl, native, f"{model_name} via {provider}: {why}")


def _mark(message: dict, marker: dict, native_anthropic: bool) -> None:
    content = message.get("content")
    if role(message) == "tool":
        if native_anthropic:   # other providers take no marker on a tool row
            message["cache_control"] = dict(marker)
    elif isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(marker)}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        content[-1]["cache_control"] = dict(marker)
    else:
        message["cache_control"] = dict(marker)


def apply_anthropic_cache_control(messages: list[dict], policy: CachingPolicy) -> list[dict]:
    # strip_cache_control copies each message and each of its content parts: the only objects
    # _mark changes, so the caller's messages stay as they were without a deep copy
    marked = strip_cache_control(messages)
    marker = policy.marker()
    if marked and role(marked[0]) == "system":
        _mark(marked[0], marker, policy.native_anthropic)
    others = [m for m in marked if role(m) != "system"]
    for message in others[-WINDOW:]:
        _mark(message, marker, policy.native_anthropic)
    return marked


class CacheMarkStage(Stage):
    name = "cache_mark"
    phase = 5
    needs = frozenset({OUTPUT})      # markers go on the conversation as written
    keeps_messages_verbatim = False

    def apply(self, draft: Draft, plan: Plan) -> Draft:
        policy = self.tools.caching
        if policy is None or not policy.enabled:
            return draft
        return draft.but(messages=tuple(apply_anthropic_cache_control(list(draft.messages), policy)))
