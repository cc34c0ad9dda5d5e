"""Phase 2: where the verbatim head ends and the verbatim tail starts.

Boundaries never split an assistant's tool calls from their results, keep the
latest user message (and the reply that follows it) in the tail, and are
chosen so that a summary message fits between head and tail without two
adjacent turns of the same role (REFERENCE §1-3, §7).
"""
from __future__ import annotations

from hermes_pipeline.stages.base import CompactionState, EngineContext, Stage
from hermes_pipeline.transcript import (
    SUMMARY_END, SUMMARY_PREFIX, is_summary_message, is_tool_result, message_text, role, visible_role,
)


def find_head_end(messages: list[dict], protect_first_n: int) -> int:
    end = min(protect_first_n, len(messages))
    while end < len(messages) and is_tool_result(messages[end]):
        end += 1   # results of a call made in the head stay with it
    return end


def align_to_group_start(messages: list[dict], index: int) -> int:
    """Move back from a tool row to the assistant message that made the call."""
    while index > 0 and is_tool_result(messages[index]):
        index -= 1
    return index


# How far the tail may stretch (x its budget) to keep the latest user message
# and reply: at the defaults 50K tokens, half the agent threshold, which leaves
# room for head and summary. Past that, the request lives on in the summary.
TAIL_STRETCH_LIMIT = 2.5


def find_tail_start(messages: list[dict], counts: list[int], tail_budget: int,
                    protect_last_n: int, head_end: int) -> int:
    n = len(messages)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counts[i]
    stretch_ok = lambda index: suffix[index] <= TAIL_STRETCH_LIMIT * tail_budget
    start, spent = n, 0
    while start > head_end and spent + counts[start - 1] <= tail_budget:
        start -= 1
        spent += counts[start]
    start = max(min(start, n - protect_last_n), head_end)
    if start >= n:
        return n
    start = align_to_group_start(messages, start)
    visible = [(i, visible_role(m)) for i, m in enumerate(messages) if i >= head_end]
    last_user = max((i for i, r in visible if r == "user"), default=None)
    if last_user is not None and last_user < start and stretch_ok(last_user):
        start = last_user                      # keep the latest user message (#10896)
    last_reply = max((i for i, r in visible if r == "assistant"), default=None)
    if last_reply is not None and last_reply < start and stretch_ok(align_to_group_start(messages, last_reply)):
        start = align_to_group_start(messages, last_reply)   # and the last visible reply (#29824)
    if start > head_end and visible_role(messages[start]) == "assistant" \
            and visible_role(messages[start - 1]) == "user":
        start -= 1                             # a reply stays with its question (#22523)
    return max(start, head_end)


def _edge_roles(messages, head_end, tail_start):
    prev = next((visible_role(m) for m in reversed(messages[:head_end]) if visible_role(m)), None)
    nxt = next((visible_role(m) for m in messages[tail_start:] if visible_role(m)), None)
    return prev, nxt


def choose_summary_role(messages: list[dict], head_end: int, tail_start: int) -> str | None:
    """The summary's role, or None when neither role fits between head and tail."""
    prev, nxt = _edge_roles(messages, head_end, tail_start)
    kept = messages[:head_end] + messages[tail_start:]
    if prev in (None, "system") or not any(role(m) == "user" for m in kept):
        candidates = ["user"]                  # #52160, #58753
    elif prev == "assistant":
        candidates = ["user", "assistant"]
    else:
        candidates = ["assistant", "user"]
    for candidate in candidates:
        if candidate != prev and candidate != nxt:
            return candidate
    return None


def previous_summary_text(message: dict) -> str:
    """The sections of an earlier compaction summary, without its wrapper lines."""
    text = message_text(message)
    text = text[text.find(SUMMARY_PREFIX) + len(SUMMARY_PREFIX):]
    first_heading = text.find("## ")
    if first_heading >= 0:
        text = text[first_heading:]
    end = text.find(SUMMARY_END)
    return (text[:end] if end >= 0 else text).strip()


def ensure_boundaries(state: CompactionState) -> None:
    """Compute head, tail and the summary's role once; prune and boundary both need them.

    The tail is widened (never shrunk: what leaves the middle is still
    summarized) until a summary role fits between head and tail, before prune
    decides what in the middle to clear.
    """
    if state.head_end is not None:
        return
    s, messages = state.settings, state.original
    state.head_end = find_head_end(messages, s.protect_first_n)
    state.tail_start = find_tail_start(messages, state.counts, state.budgets.tail_token_budget,
                                       s.protect_last_n, state.head_end)
    while state.tail_start > state.head_end:
        state.summary_role = choose_summary_role(messages, state.head_end, state.tail_start)
        if state.summary_role:
            break
        state.tail_start = align_to_group_start(messages, state.tail_start - 1)
        state.count("tail_widened_for_roles")


class BoundaryStage(Stage):
    name = "boundary"

    def run(self, state: CompactionState, context: EngineContext) -> None:
        ensure_boundaries(state)
        middle = state.original[state.head_end:state.tail_start]
        if not middle:
            state.noop_reason = "head and tail cover the whole conversation"
            return
        earlier = [m for m in middle if is_summary_message(m)]
        if earlier:
            state.previous_summary = previous_summary_text(earlier[-1])
