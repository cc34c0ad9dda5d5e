"""Phase 4: head + summary message + tail, then tool pairs made whole again."""
from __future__ import annotations

from hermes_pipeline.stages.base import CompactionState, EngineContext, Stage
from hermes_pipeline.transcript import (
    COMPACTION_NOTE, SUMMARY_END, SUMMARY_PREFIX, is_tool_result, message_text, role, tool_calls,
)

STUB_RESULT = "[Tool result unavailable: it was removed when the conversation was compacted]"


def summary_message(text: str, summary_role: str, compacted_messages: int) -> dict:
    body = (
        f"{SUMMARY_PREFIX} {compacted_messages} earlier messages of this conversation were "
        "compacted into the summary below. It is reference material about what already "
        "happened, not a new request.\n\n"
        f"{text}\n\n{SUMMARY_END}"
    )
    return {"role": summary_role, "content": body}


def add_compaction_note(message: dict) -> dict:
    """The system prompt gains the note once, on the first compaction only."""
    content = message.get("content")
    if COMPACTION_NOTE in message_text(message):
        return message
    if isinstance(content, str) or content is None:
        return {**message, "content": f"{content or ''}\n\n{COMPACTION_NOTE}".lstrip()}
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": COMPACTION_NOTE}]}
    return message


def sanitize_tool_pairs(messages: list[dict], count) -> list[dict]:
    """Drop results whose call is gone; give calls whose result is gone a stub.

    Calls are never removed, so no assistant message is left empty by this.

    Results pair with the calls of the assistant message just before their run
    of tool rows, by position: ids are not unique in real data (REFERENCE §4).
    """
    out: list[dict] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if is_tool_result(message):
            count("orphan_results_dropped")
            i += 1
            continue
        out.append(message)
        i += 1
        calls = tool_calls(message) if role(message) == "assistant" else []
        wanted = [c.get("id") for c in calls]
        while i < len(messages) and is_tool_result(messages[i]):
            call_id = messages[i].get("tool_call_id")
            if call_id in wanted:
                wanted.remove(call_id)
                out.append(messages[i])
            else:
                count("orphan_results_dropped")
            i += 1
        for call_id in wanted:
            out.append({"role": "tool", "tool_call_id": call_id, "content": STUB_RESULT})
            count("stub_results_added")
    return out


class AssembleStage(Stage):
    name = "assemble"

    def run(self, state: CompactionState, context: EngineContext) -> None:
        if state.noop_reason:
            state.output = list(state.original)
            return
        head = list(state.original[:state.head_end])
        if head and role(head[0]) == "system" and state.previous_summary is None:
            head[0] = add_compaction_note(head[0])
        tail = state.messages[state.tail_start:]
        if state.summary is not None:
            middle = [summary_message(state.summary.text, state.summary_role,
                                      state.tail_start - state.head_end)]
        else:   # a chain without summarize keeps the pruned middle (observation masking)
            middle = state.messages[state.head_end:state.tail_start]
        state.output = sanitize_tool_pairs(head + middle + tail, state.count)
