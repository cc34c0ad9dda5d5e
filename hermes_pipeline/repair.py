"""Input repairs that run before the engine: only additive ones, always noted.

Real logs lose lines: a tool call whose result never came, a result whose
call was on a broken line. Dropping either would lose what it says, so the
gap is filled instead, with a placeholder that says what it is.
"""
from __future__ import annotations

from hermes_pipeline.transcript import Conversation, is_tool_result, role, tool_calls

STUB_RESULT = "[Tool result unavailable: it is missing from the input transcript]"
UNKNOWN_TOOL = "unknown_tool"   # name of a placeholder call for a result whose call is missing


def _placeholder_call(result: dict) -> dict:
    return {"id": result.get("tool_call_id"), "type": "function",
            "function": {"name": result.get("name") or UNKNOWN_TOOL, "arguments": "{}"}}


def repair_tool_pairing(conversation: Conversation) -> None:
    """Pair every call with a result and every result with a call, by position.

    A call without a result gets a stub result; a result without a call gets a
    placeholder call (added to the assistant message it follows, or in a new
    tool-call-only assistant message). Ids may repeat across a conversation,
    so results only pair with the calls of the message just before them.
    """
    messages, out = conversation.messages, []
    stubs = placeholders = 0
    i = 0
    while i < len(messages):
        message = messages[i]
        owner = None
        if is_tool_result(message):          # results with no assistant message before them
            owner = {"role": "assistant", "content": None, "tool_calls": []}
        else:
            out.append(message)
            i += 1
            if role(message) == "assistant" and (tool_calls(message) or
                                                 (i < len(messages) and is_tool_result(messages[i]))):
                owner = message
        if owner is None:
            continue
        wanted = [call.get("id") for call in tool_calls(owner)]
        extra_calls, rows = [], []
        while i < len(messages) and is_tool_result(messages[i]):
            call_id = messages[i].get("tool_call_id")
            if call_id in wanted:
                wanted.remove(call_id)
            else:
                extra_calls.append(_placeholder_call(messages[i]))
            rows.append(messages[i])
            i += 1
        if extra_calls:
            placeholders += len(extra_calls)
            patched = {**owner, "tool_calls": [*tool_calls(owner), *extra_calls]}
            if owner is message and out and out[-1] is message:
                out[-1] = patched
            else:
                out.append(patched)
        out.extend(rows)
        for call_id in wanted:
            out.append({"role": "tool", "tool_call_id": call_id, "content": STUB_RESULT})
            stubs += 1
    if stubs:
        conversation.notes.append(f"added {stubs} stub result(s) for tool calls that had none")
        conversation.stats["input_stub_results_added"] = stubs
    if placeholders:
        conversation.notes.append(f"added {placeholders} placeholder call(s) for tool results that had none")
        conversation.stats["input_placeholder_calls_added"] = placeholders
    if stubs or placeholders:
        conversation.messages = out
