"""Phase 2, boundaries: one frozen plan per compaction, computed before any stage runs.

The budgets are pure functions of the config and the context length.
The plan says where the verbatim head ends and the verbatim tail starts, and
which role the summary takes. Boundaries never split an assistant's tool calls
from their results, keep the latest user message (and the reply that follows
it) in the tail, and leave room for a summary message between head and tail
without two adjacent turns of the same role.
"""
from __future__ import annotations

from dataclasses import dataclass

from hermes_pipeline.config.schema import CompressionConfig
from hermes_pipeline.transcript import (
    EARLIER_SUMMARY,
    SUMMARY_END,
    command_run,
    is_summary_message,
    is_tool_result,
    message_text,
    role,
    visible_role,
)

# The summary budget, as Hermes computes it (agent/context_compressor.py, _compute_summary_budget):
# max(floor, min(content x share, context x context share, ceiling)): the floor wins over the context's
# share, which only happens below 40K contexts (Hermes itself needs 64K). There the floor is at most a tenth
# of the context (the verbatim tail's budget at the default threshold and target_ratio), so that at 8K and
# under a summary does not crowd out the tail, and a larger tail (target_ratio) does not enlarge it.
SUMMARY_SHARE = 0.20          # summary budget = content tokens x this ...
SUMMARY_CONTEXT_SHARE = CompressionConfig.summary_context_share  # ... at most context x this ...
SUMMARY_CEILING = CompressionConfig.summary_ceiling              # ... and never more than this ...
SUMMARY_FLOOR = 2_000         # ... but at least this (at most the ceiling and a tenth of the context; in
                              # fit mode at most the target's share: the rule as it was before Hermes' order)
SUMMARY_FLOOR_CONTEXT_SHARE = 0.10
# How far the tail may stretch (x its budget) to keep the latest user message
# and reply: at the defaults 50K tokens, half the agent threshold, which leaves
# room for head and summary. Past that, the request lives on in the summary.
TAIL_STRETCH_LIMIT = 2.5


@dataclass(frozen=True)
class Budgets:
    context_length: int
    threshold_tokens: int       # the agent layer fires at or above this
    hygiene_tokens: int         # the safety-net layer fires at or above this
    tail_token_budget: int      # tokens of recent messages kept verbatim
    max_summary_tokens: int     # context x summary_context_share, at most summary_ceiling
    summary_floor: int = SUMMARY_FLOOR   # the least a summary is given, whatever the two above say
    # the most cl100k tokens a written conversation may hold: the safety net's share of the context in
    # the model's own tokens (cl100k x model.token_scale); 0: not checked (engine/context_fit.py)
    fit_tokens: int = 0

    def summary_tokens(self, content_tokens: int) -> int:
        """Target size of a summary of `content_tokens` tokens of middle."""
        return max(min(int(content_tokens * SUMMARY_SHARE), self.max_summary_tokens), self.summary_floor)


def compute_budgets(context_length: int, threshold: float, target_ratio: float,
                    hygiene_threshold: float, token_scale: float = 1.0, target_tokens: int | None = None,
                    summary_context_share: float = SUMMARY_CONTEXT_SHARE,
                    summary_ceiling: int = SUMMARY_CEILING) -> Budgets:
    """`target_tokens` (fit mode): what a conversation must fit instead of the safety net's share of the
    context; its summaries are sized to it as they are to a context. `summary_context_share`,
    `summary_ceiling`: compression.* (SPEC's 5% and 12,000 by default)."""
    threshold_tokens = int(context_length * threshold)
    tail_token_budget = int(threshold_tokens * target_ratio)
    fits_in = target_tokens or context_length
    max_summary_tokens = min(int(fits_in * summary_context_share), int(summary_ceiling))
    # fit mode summarizes the fewest turns that reach the target: its summary stays within the target's share
    floor_room = max_summary_tokens if target_tokens else \
        min(int(context_length * SUMMARY_FLOOR_CONTEXT_SHARE), int(summary_ceiling))
    return Budgets(
        context_length=context_length,
        threshold_tokens=threshold_tokens,
        hygiene_tokens=int(context_length * hygiene_threshold),
        tail_token_budget=tail_token_budget,
        max_summary_tokens=max_summary_tokens,
        summary_floor=min(SUMMARY_FLOOR, floor_room),
        fit_tokens=int((target_tokens or context_length * hygiene_threshold) / token_scale),
    )


@dataclass(frozen=True)
class Plan:
    """Everything a stage may know about one compaction; never changed once made."""
    conversation_id: str
    original: tuple[dict, ...]      # the input messages
    counts: tuple[int, ...]         # tokens of each original message
    budgets: Budgets
    settings: CompressionConfig     # compression.*: its knobs (the schema's defaults, or the config's)
    head_end: int                   # middle = original[head_end:tail_start]
    tail_start: int
    summary_role: str               # the role that fits between head and tail
    previous_summary: str | None    # an earlier compaction summary found in the middle
    tail_widened: int = 0           # messages moved from middle to tail so a summary role fits
    # what the fit step (engine/context_fit.py) changes so that the output fits the context:
    pruned: frozenset = frozenset() # head and tail messages pruned as the middle is (indices into original)
    shorten: tuple = ()             # (index, characters kept) of head and tail tool outputs to shorten
    summary_budget: int | None = None   # a cut summary budget (None: the usual budget)
    verbatim: bool = False          # compression.mode=fit: every kept message stays exactly as it is

    @property
    def middle(self) -> tuple[dict, ...]:
        return self.original[self.head_end:self.tail_start]

    @property
    def middle_tokens(self) -> int:
        return sum(self.counts[self.head_end:self.tail_start])

    @property
    def summary_tokens(self) -> int:
        """The summary's budget: a fifth of the middle within the budgets' bounds, unless the fit step cut it."""
        if self.summary_budget is not None:
            return self.summary_budget
        return self.budgets.summary_tokens(self.middle_tokens)


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
    # the latest message the user wrote (a command the user ran and its output is output, not their words)
    last_user = max((i for i, r in visible if r == "user" and command_run(messages[i]) is None), default=None)
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
    """An earlier compaction summary without its wrapper: the line that opens with its marker (ours, Claude
    Code's or pi's as read, Hermes') and our closing line."""
    text = message_text(message)
    found = EARLIER_SUMMARY.search(text)
    if found is not None and found.group().endswith(":"):      # "[CONTEXT SUMMARY]: <the summary>"
        text = text[found.end():]
    elif found is not None:                                     # the marker's line is the wrapper
        line_end = text.find("\n", found.end())
        text = text[line_end + 1:] if line_end >= 0 else text[found.end():]
    end = text.find(SUMMARY_END)
    return (text[:end] if end >= 0 else text).strip()


NOTHING_TO_COMPACT = "head and tail cover the whole conversation"
# No role fits between head and tail, however far the tail is widened (a single prompt, then only the
# agent): the summary opens the first visible tail message instead, marked as prior context.
MERGE = "merge"


def make_plan(conversation_id: str, messages: list[dict], counts: list[int], budgets: Budgets,
              settings: CompressionConfig, fixed_tail_start: int | None = None) -> Plan | str:
    """The plan, or why there is nothing to compact.

    The tail is widened (never shrunk: what leaves the middle is still
    summarized) until a summary role fits between head and tail; when none
    ever does, the summary is merged into the first visible tail message.
    `fixed_tail_start` replaces the tail the budgets give (the fit step lowers the tail).
    """
    head_end = find_head_end(messages, settings.protect_first_n)
    # an earlier summary in the head (a log that starts after the agent's own compaction) is updated by the
    # new one, not kept verbatim above it: the head ends before it
    head_end = next((i for i in range(head_end) if is_summary_message(messages[i])), head_end)
    tail_start = find_tail_start(messages, counts, budgets.tail_token_budget, settings.protect_last_n, head_end) \
        if fixed_tail_start is None else fixed_tail_start
    first_tail = tail_start
    summary_role, widened = None, 0
    while tail_start > head_end:
        summary_role = choose_summary_role(messages, head_end, tail_start)
        if summary_role:
            break
        tail_start = align_to_group_start(messages, tail_start - 1)
        widened += 1
    if tail_start <= head_end:
        if first_tail <= head_end or not any(visible_role(m) in ("user", "assistant") for m in messages[first_tail:]):
            return NOTHING_TO_COMPACT
        tail_start, summary_role, widened = first_tail, MERGE, 0
    earlier = [m for m in messages[head_end:tail_start] if is_summary_message(m)]
    return Plan(conversation_id, tuple(messages), tuple(counts), budgets, settings, head_end, tail_start,
                summary_role, previous_summary_text(earlier[-1]) if earlier else None, widened)
