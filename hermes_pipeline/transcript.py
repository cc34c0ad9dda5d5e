"""The canonical in-memory conversation: OpenAI chat messages as plain dicts.

Every reader turns its format into this shape and every writer turns it back,
so the stages only ever see one message model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SUMMARY_PREFIX = "[CONTEXT COMPACTION]"
SUMMARY_END = "[End of context summary — respond to the message below, not to this summary.]"
COMPACTION_NOTE = (
    "[Note: earlier turns of this conversation were compacted into a summary "
    "to save context space.]"
)


@dataclass
class Conversation:
    id: str
    messages: list[dict]
    source: str                      # "file:line" of the record it came from
    format: str = "openai"
    layout: str = "conversation"     # "conversation" (one per line) or "message" (one message per line)
    record: dict | None = None       # the original record, for carrying other fields through
    recorded_prompt_tokens: int | None = None   # API-reported usage found in the transcript
    notes: list[str] = field(default_factory=list)   # repairs made while reading
    stats: dict[str, int] = field(default_factory=dict)   # counted while reading (e.g. duplicates dropped)


def role(message: dict) -> str:
    return message.get("role", "")


def tool_calls(message: dict) -> list[dict]:
    calls = message.get("tool_calls")
    return calls if isinstance(calls, list) else []


def is_tool_result(message: dict) -> bool:
    return role(message) == "tool"


def text_of(content: Any) -> str:
    """All text in a message content (string, list of parts, or None)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def message_text(message: dict) -> str:
    return text_of(message.get("content"))


def visible_role(message: dict) -> str | None:
    """The role a chat template shows, or None for rows it skips.

    Tool rows and assistant rows that only carry tool calls don't count when
    checking that user and assistant turns alternate (REFERENCE §3).
    """
    r = role(message)
    if r == "tool":
        return None
    if r == "assistant" and tool_calls(message) and not message_text(message).strip():
        return None
    return r


def is_summary_message(message: dict) -> bool:
    return SUMMARY_PREFIX in message_text(message)[:400]


def tool_group_end(messages: list[dict], start: int) -> int:
    """Index just past the tool rows that directly follow messages[start]."""
    end = start + 1
    while end < len(messages) and is_tool_result(messages[end]):
        end += 1
    return end


def same_role_neighbours(messages: list[dict]) -> list[int]:
    """Indexes i where visible user/assistant turns i-1 and i share a role."""
    bad = []
    previous = None
    for i, message in enumerate(messages):
        r = visible_role(message)
        if r not in ("user", "assistant"):
            if r is not None:
                previous = None
            continue
        if previous is not None and previous[1] == r:
            bad.append(i)
        previous = (i, r)
    return bad


def pairing_problems(messages: list[dict]) -> list[str]:
    """Tool calls without a result and results without a call, paired by position.

    Results pair with the calls of the assistant message right before their run
    of tool rows; ids may repeat across a conversation, so no global id map.
    """
    problems = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if is_tool_result(message):
            problems.append(f"message {i}: tool result without a preceding call")
            i += 1
            continue
        calls = tool_calls(message) if role(message) == "assistant" else []
        end = tool_group_end(messages, i)
        if calls or end > i + 1:
            wanted = [c.get("id") for c in calls]
            for j in range(i + 1, end):
                call_id = messages[j].get("tool_call_id")
                if call_id in wanted:
                    wanted.remove(call_id)
                else:
                    problems.append(f"message {j}: tool result {call_id!r} has no call")
            for call_id in wanted:
                problems.append(f"message {i}: tool call {call_id!r} has no result")
        i = end
    return problems
