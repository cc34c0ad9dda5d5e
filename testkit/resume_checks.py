"""What a resumed agent sent, against what our compacted session file says it should send.

Both sides are flattened to a sequence of blocks: ("text", text), ("tool_use", id),
("tool_result", id). Our side is read straight from the file we wrote (the lines
after our compaction), not through our own reader; the agent's side is its
request, minus what the agent adds by itself (its <system-reminder> context and
the prompt it was given, the "No response requested." Claude Code answers a session
that ended with a local command with) and its reasoning blocks. A text block
matches when the agent's text contains ours (pi wraps a summary in its own words).
"""
from __future__ import annotations

import json
from pathlib import Path

from testkit.agents import PROMPT

Block = tuple[str, str]
# Claude Code's own answer to a session that ended with a local command (/exit), sent before the new prompt
NO_RESPONSE = "No response requested."


def _blocks(content, thinking_as_text: bool = False) -> list[Block]:
    if isinstance(content, str):
        return [("text", content)] if content.strip() else []
    out: list[Block] = []
    for block in content or ():
        kind = block.get("type")
        if kind == "text" and block.get("text", "").strip():
            out.append(("text", block["text"]))
        elif kind in ("tool_use", "toolCall"):
            out.append(("tool_use", block["id"]))
        elif kind == "tool_result":
            out.append(("tool_result", block["tool_use_id"]))
        elif kind == "thinking" and thinking_as_text and not block.get("thinkingSignature") \
                and block.get("thinking", "").strip():
            out.append(("text", block["thinking"]))     # reasoning of another provider: pi sends it as text
    return out


def request_blocks(messages: list[dict], reminders: bool = True) -> list[Block]:
    """The blocks an agent sent, without its own additions (`reminders`: Claude Code's <system-reminder>
    context; pi adds none, and a session's own reminders, sent by pi, are the session's)."""
    out: list[Block] = []
    for message in messages:
        if message.get("role") == "system":
            continue
        out.extend(b for b in _blocks(message.get("content"))
                   if not (reminders and b[0] == "text" and b[1].lstrip().startswith("<system-reminder>")))
    if out and out[-1] == ("text", PROMPT):
        out.pop()
    if out and out[-1] == ("text", NO_RESPONSE):
        out.pop()
    return out


def user_texts(messages: list[dict]) -> list[str]:
    """The text of each user message an agent sent (its blocks joined)."""
    return ["\n".join(text for kind, text in _blocks(m.get("content")) if kind == "text")
            for m in messages if m.get("role") == "user"]


def _lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def claude_code_expected(path: Path) -> tuple[list[Block], str]:
    """(the blocks after our compact_boundary, the summary text) of a Claude Code session we wrote."""
    lines = _lines(path)
    start = max(i for i, v in enumerate(lines) if v.get("subtype") == "compact_boundary")
    blocks, summary = [], None
    for value in lines[start + 1:]:
        if value.get("type") not in ("user", "assistant") or value.get("isSidechain"):
            continue
        if value.get("isCompactSummary"):
            summary = value["message"]["content"]
        blocks.extend(_blocks(value["message"]["content"]))
    assert summary is not None, f"{path}: no isCompactSummary line after the boundary"
    return blocks, summary


def pi_expected(path: Path) -> tuple[list[Block], str]:
    """(the summary, then the blocks of the entries after our compaction; the summary) of a pi session we wrote."""
    lines = _lines(path)
    start = max(i for i, v in enumerate(lines) if v.get("type") == "compaction")
    summary = lines[start]["summary"]
    blocks: list[Block] = [("text", summary)]
    for value in lines[start + 1:]:
        if value.get("type") == "custom_message":
            blocks.extend(_blocks(value.get("content")))
        if value.get("type") != "message":
            continue
        message = value["message"]
        if message.get("role") == "toolResult":
            blocks.append(("tool_result", message["toolCallId"]))
        elif message.get("role") in ("user", "assistant", "custom"):
            blocks.extend(_blocks(message.get("content"), thinking_as_text=True))
        elif message.get("role") in ("compactionSummary", "branchSummary"):
            blocks.append(("text", message["summary"]))
    return blocks, summary


def mismatch(expected: list[Block], sent: list[Block]) -> str | None:
    """Where the agent's blocks differ from ours, or None when it sent exactly ours, in order."""
    if len(expected) != len(sent):
        return f"{len(sent)} blocks sent, {len(expected)} expected; first sent: {sent[:3]}, expected: {expected[:3]}"
    for index, (ours, theirs) in enumerate(zip(expected, sent)):
        if ours[0] != theirs[0] or (ours[0] == "text" and ours[1].strip() not in theirs[1]) \
                or (ours[0] != "text" and ours[1] != theirs[1]):
            return f"block {index}: sent {theirs[0]} {theirs[1][:120]!r}, expected {ours[0]} {ours[1][:120]!r}"
    return None
