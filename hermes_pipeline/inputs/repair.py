"""Input repairs that run before the engine: only additive ones, always noted.

Real logs lose lines: a tool call whose result never came, a result whose
call was on a broken line. Dropping either would lose what it says, so the
gap is filled instead, with a placeholder that says what it is.
"""
from __future__ import annotations

from dataclasses import replace

from hermes_pipeline.transcript import Conversation, role, tool_calls, turns

STUB_RESULT = "[Tool result unavailable: it is missing from the input transcript]"
UNKNOWN_TOOL = "unknown_tool"   # name of a placeholder call for a result whose call is missing


def _placeholder_call(result: dict) -> dict:
    return {"id": result.get("tool_call_id"), "type": "function",
            "function": {"name": result.get("name") or UNKNOWN_TOOL, "arguments": "{}"}}


def repair_tool_pairing(conversation: Conversation) -> Conversation:
    """Pair every call with a result and every result with a call, by position.

    A call without a result gets a stub result; a result without a call gets a
    placeholder call (added to the assistant message it follows, or in a new
    tool-call-only assistant message). The input is not changed: a repaired
    copy comes back, with what was done in its notes and stats.
    """
    out: list[dict] = []
    lines: list[int] = []      # each message's input line, kept in step (an added one: its neighbour's)
    known = conversation.message_lines
    stubs = placeholders = 0
    for turn in turns(conversation.messages):
        owner = turn.message
        line = known[turn.index] if known else 0
        if owner is not None:
            out.append(owner)
            lines.append(line)
        if not turn.rows and not turn.calls:
            continue
        extra_calls = [_placeholder_call(row) for row, matched in zip(turn.rows, turn.matched) if not matched]
        if extra_calls:
            placeholders += len(extra_calls)
            if owner is not None and role(owner) == "assistant":
                out[-1] = {**owner, "tool_calls": [*tool_calls(owner), *extra_calls]}
            else:   # results after a user message, or with nothing before them
                out.append({"role": "assistant", "content": None, "tool_calls": extra_calls})
                lines.append(line)
        first_row = turn.index + (owner is not None)
        out.extend(turn.rows)
        lines.extend(known[first_row:first_row + len(turn.rows)] if known else [0] * len(turn.rows))
        for call in turn.unanswered:
            out.append({"role": "tool", "tool_call_id": call.get("id"), "content": STUB_RESULT})
            lines.append(line)
            stubs += 1
    if not stubs and not placeholders:
        return conversation
    notes, stats = list(conversation.notes), dict(conversation.stats)
    if stubs:
        notes.append(f"added {stubs} stub result(s) for tool calls that had none")
        stats["input_stub_results_added"] = stubs
    if placeholders:
        notes.append(f"added {placeholders} placeholder call(s) for tool results that had none")
        stats["input_placeholder_calls_added"] = placeholders
    return replace(conversation, messages=out, notes=notes, stats=stats, message_lines=lines if known else None)
