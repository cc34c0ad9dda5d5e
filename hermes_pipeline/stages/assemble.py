"""Phase 4: head + summary message + tail, then tool pairs made whole again."""
from __future__ import annotations

import re
from collections import Counter

from hermes_pipeline.config import ConfigError
from hermes_pipeline.stages.base import OUTPUT, SOURCE, SUMMARY, Draft, Stage, StageTools
from hermes_pipeline.stages.plan import MERGE, Plan
from hermes_pipeline.transcript import (
    COMPACTION_NOTE,
    SUMMARY_END,
    SUMMARY_PREFIX,
    message_text,
    role,
    turns,
    visible_role,
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


_EARLIER_COUNT = re.compile(re.escape(SUMMARY_PREFIX) + r" (\d+) earlier messages")


def messages_summarized(middle) -> int:
    """How many original messages a summary of `middle` stands for: an earlier summary in it
    stands for the messages it says it compacted, not for one."""
    total = 0
    for message in middle:
        found = _EARLIER_COUNT.search(message_text(message)[:400])   # where is_summary_message looks
        total += int(found.group(1)) if found else 1
    return total


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


def sanitize_tool_pairs(messages: list[dict], stats: Counter) -> list[dict]:
    """Drop results whose call is gone; give calls whose result is gone a stub.

    Calls are never removed, so no assistant message is left empty by this.
    """
    out: list[dict] = []
    for turn in turns(messages):
        if turn.message is not None:
            out.append(turn.message)
        for row, matched in zip(turn.rows, turn.matched):
            if matched:
                out.append(row)
            else:
                stats["orphan_results_dropped"] += 1
        for call in turn.unanswered:
            out.append({"role": "tool", "tool_call_id": call.get("id"), "content": STUB_RESULT})
            stats["stub_results_added"] += 1
    return out


def merged_into_first_visible(tail: list[dict], block: str) -> list[dict]:
    """The tail with the summary block opening its first user or assistant message with text."""
    out = list(tail)
    for i, message in enumerate(out):
        if visible_role(message) not in ("user", "assistant"):
            continue
        content = message.get("content")
        if isinstance(content, list):
            out[i] = {**message, "content": [{"type": "text", "text": block}, *content]}
        else:
            out[i] = {**message, "content": f"{block}\n\n{content or ''}"}
        return out
    return out


class AssembleStage(Stage):
    """`middle: summary` puts the summary between head and tail; `middle: pruned` keeps the pruned middle
    (observation masking, pipeline=mask_only: a chain without summarize)."""
    name = "assemble"
    phase = 4
    provides = frozenset({OUTPUT})
    MIDDLES = ("summary", "pruned")

    def __init__(self, tools: StageTools | None = None, middle: str = "summary"):
        super().__init__(tools)
        if middle not in self.MIDDLES:
            raise ConfigError(f"assemble: middle={middle!r}, expected one of {', '.join(self.MIDDLES)}")
        self.middle = middle
        self.needs = frozenset({SOURCE, SUMMARY} if middle == "summary" else {SOURCE})

    def apply(self, draft: Draft, plan: Plan) -> Draft:
        stats: Counter = Counter()
        head = list(draft.messages[:plan.head_end])     # as pruned: the fit step may clear its tool outputs
        if head and role(head[0]) == "system" and plan.previous_summary is None and plan.middle \
                and not plan.verbatim:
            head[0] = add_compaction_note(head[0])
        tail = list(draft.messages[plan.tail_start:])
        compacted = messages_summarized(plan.middle)
        if self.middle == "pruned":
            middle = list(draft.messages[plan.head_end:plan.tail_start])
        elif draft.summary is None:     # nothing to summarize: the fit step only cleared head and tail outputs
            middle = []
        elif plan.summary_role == MERGE:
            middle = []
            tail = merged_into_first_visible(tail, summary_message(draft.summary.text, "", compacted)["content"])
            stats["summary_merged_into_tail"] += 1
        else:
            middle = [summary_message(draft.summary.text, plan.summary_role, compacted)]
        return draft.but(messages=tuple(sanitize_tool_pairs(head + middle + tail, stats)), counts=stats)
