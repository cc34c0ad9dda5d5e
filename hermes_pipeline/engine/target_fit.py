"""compression.mode=fit, for training data: the fewest middle turns summarized, every other turn verbatim.

As Hermes' own offline `trajectory_compressor` does, a conversation over
`compression.target_tokens` keeps its head (system prompt, first request, first
reply and its results) and its last `compression.target_protect_last_n`
messages; from the start of the middle, only as many turns as needed are
replaced by one summary turn. Nothing kept is changed: no pruning, no cleared
tool outputs, no note on the system prompt, no cache markers. The summary gets
a turn of its own whose role keeps the order valid: `user` (a ShareGPT `human`
turn, where Hermes puts it) when the next kept message is the assistant's,
else `assistant`; never a role next to the same role. The span never ends on a
tool result, so no call is parted from its result.

The measure is the fit check's (engine/context_fit.py): exact cl100k count x
model.token_scale against the target.
"""
from __future__ import annotations

from collections import Counter

from hermes_pipeline.engine.context_fit import Fitting
from hermes_pipeline.stages.assemble import summary_message
from hermes_pipeline.stages.plan import Plan, align_to_group_start, find_head_end, previous_summary_text
from hermes_pipeline.transcript import is_summary_message, is_tool_result, role

UNDER_TARGET = "under the target"
NOTHING_TO_SUMMARIZE = "head and protected last messages cover the whole conversation"


def summary_role_between(before: dict, after: dict | None) -> str | None:
    """The summary's role between two kept messages, or None when neither role avoids a same-role neighbour."""
    neighbours = {role(before), role(after) if after is not None else None}
    return next((r for r in ("user", "assistant") if r not in neighbours), None)


class SpanFitter:
    """Chooses the summarized span [head end, end) of a conversation in fit mode."""

    verbatim = True      # the stages must leave every kept message as it is

    def __init__(self, counter, limit: int, protect_last_n: int):
        self.counter = counter
        self.limit = limit                   # the target, in cl100k tokens
        self.protect_last_n = protect_last_n

    @property
    def checks(self) -> bool:
        return self.limit > 0

    def plan(self, conversation_id, messages, counts, budgets, settings, over: bool) -> Plan | str:
        """The widest plan (every turn that may be summarized is); `fit` narrows it to the fewest turns."""
        ends = self._ends(messages, find_head_end(messages, settings.protect_first_n))
        if not ends:
            return NOTHING_TO_SUMMARIZE
        return self._span(conversation_id, messages, counts, budgets, settings, ends[-1])

    def _ends(self, messages: list[dict], head_end: int) -> list[int]:
        """Where a summarized span may end: on a turn start up to the protected last messages, with a role
        for the summary that keeps the order valid."""
        last = align_to_group_start(messages, max(len(messages) - self.protect_last_n, 0))
        if head_end == 0 or last <= head_end:
            return []
        return [end for end in range(head_end + 1, last + 1)
                if not is_tool_result(messages[end]) and summary_role_between(messages[head_end - 1], messages[end])]

    @staticmethod
    def _span(conversation_id, messages, counts, budgets, settings, end: int) -> Plan:
        head_end = find_head_end(messages, settings.protect_first_n)
        earlier = [m for m in messages[head_end:end] if is_summary_message(m)]
        return Plan(conversation_id, tuple(messages), tuple(counts), budgets, settings, head_end, end,
                    summary_role_between(messages[head_end - 1], messages[end]),
                    previous_summary_text(earlier[-1]) if earlier else None, verbatim=True)

    def predict(self, plan: Plan) -> int:
        summary = self.counter.count_message(summary_message("", plan.summary_role, len(plan.middle)))
        return sum(plan.counts) - plan.middle_tokens + summary + plan.summary_tokens

    def fit(self, plan: Plan, slack: int = 0) -> Fitting:
        """The first span end (fewest turns summarized) whose predicted output is within the target less
        `slack`; the widest span when none is."""
        messages, budget = list(plan.original), self.limit - slack
        candidate = plan
        for end in self._ends(messages, plan.head_end):
            candidate = self._span(plan.conversation_id, messages, plan.counts, plan.budgets, plan.settings, end)
            if self.predict(candidate) <= budget:
                break
        return Fitting(candidate, self.predict(candidate), Counter({"fit_turns_summarized": len(candidate.middle)}))

    def why_not(self, plan: Plan, output_tokens: int) -> str:
        kept = len(plan.original) - plan.tail_start
        return (f"{output_tokens:,} tokens with every turn it may summarize summarized, over the target of "
                f"{self.limit:,}: the head and the last {kept} messages are kept verbatim "
                "(compression.target_protect_last_n, from the start of a turn)")
