"""Every output fits the context, or says why not (issue 19).

The measure, as docs/compaction.md states it: the exact cl100k count of the written
conversation, times `model.token_scale` (the model's own tokens per cl100k
token), is at most `hygiene.threshold` x `model.context_length`, the share at
which the safety net would compact it again on the next turn.
`Budgets.fit_tokens` is that limit in cl100k tokens.

Before the stages run, the plan's output is predicted: head and tail counted
exactly as prune will leave them, plus the summary's budget and its wrapper.
While the prediction is over the limit, the plan is shrunk, in this order:
0. what the summary's floor added over the context's share of it (at contexts
   under 40K, stages/plan.py) is taken back first: it is the last thing given;
1. old messages in the head and the tail are pruned as the middle is (tool
   outputs cleared, long tool-call arguments shortened), oldest first, never in
   the last exchange (the latest user message and the last 3 messages, as an
   oversized tail keeps them);
2. the tail is lowered below `protect_last_n`, a turn at a time, down to the
   latest user message and its answer (what leaves the tail is summarized);
3. tool outputs still kept are shortened, largest first, with a marker;
4. only then is the summary's budget cut.
The compressor checks the prediction against the exact count of what the
stages wrote, and says why when even that is over.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from hermes_pipeline.stages.assemble import summary_message
from hermes_pipeline.stages.plan import Plan, align_to_group_start, find_head_end, make_plan
from hermes_pipeline.stages.prune import (
    TAIL_KEPT_VERBATIM,
    cleared_tool_output,
    demoted_in_tail,
    fit_pruned,
    is_output,
    output_text,
    prune_message,
    shortened_tool_output,
)
from hermes_pipeline.transcript import COMPACTION_NOTE, command_run, is_tool_result, role, visible_role

MIN_SHORTENED_TOKENS = 200   # a shortened tool output keeps at least about this many tokens
MIN_SUMMARY_TOKENS = 200     # a cut summary budget never goes below this
SHORTEN_ROUNDS = 3           # chars are not tokens: a shortened output may be cut again, this many times


@dataclass(frozen=True)
class Fitting:
    plan: Plan
    predicted: int               # cl100k tokens the plan's output should have
    actions: Counter             # what the fit step changed in the plan, for the row's stats

    @property
    def key(self) -> tuple:
        p = self.plan
        return p.tail_start, p.pruned, p.shorten, p.summary_budget


def last_exchange(messages: list[dict]) -> set[int]:
    """The latest user message and the last few messages, from the start of their turn (as prune keeps them)."""
    n = len(messages)
    if not n:
        return set()
    protected = set(range(align_to_group_start(messages, max(n - TAIL_KEPT_VERBATIM, 0)), n))
    latest_user = latest_user_index(messages)
    if latest_user is not None:
        protected.add(latest_user)
    return protected


def latest_user_index(messages: list[dict]) -> int | None:
    """The latest message the user wrote (a command the user ran is output, not the user's words)."""
    return next((i for i in range(len(messages) - 1, -1, -1)
                 if visible_role(messages[i]) == "user" and command_run(messages[i]) is None), None)


def pruned_message(message: dict, plan: Plan) -> dict:
    return prune_message(message, plan.settings, Counter())


class Fitter:
    """Predicts the size of a plan's output and shrinks the plan until it fits the limit."""

    verbatim = False     # the stages may change kept messages (fit mode's SpanFitter may not)

    def __init__(self, counter, limit: int, summarizes: bool = True):
        self.counter = counter
        self.limit = limit               # cl100k tokens; 0: nothing is checked
        self.summarizes = summarizes     # False: the chain keeps the pruned middle (pipeline=mask_only)

    @property
    def checks(self) -> bool:
        return self.limit > 0

    def plan(self, conversation_id, messages, counts, budgets, settings, over: bool) -> Plan | str:
        """The boundaries' plan; when head and tail cover everything yet it is over the limit, head and tail
        with nothing between (the fit step then shrinks them)."""
        plan = make_plan(conversation_id, messages, counts, budgets, settings)
        if isinstance(plan, Plan) or not over:
            return plan
        return self.whole_plan(conversation_id, messages, counts, budgets, settings)

    @staticmethod
    def whole_plan(conversation_id: str, messages: list[dict], counts: list[int], budgets, settings) -> Plan:
        """Head and tail with nothing between: where the fit step starts when head and tail cover everything."""
        head_end = find_head_end(messages, settings.protect_first_n)
        return Plan(conversation_id, tuple(messages), tuple(counts), budgets, settings, head_end, head_end, "", None)

    # -- prediction ---------------------------------------------------------------------

    def tokens_of(self, plan: Plan, i: int, demoted: set[int] | frozenset = frozenset()) -> int:
        """Tokens of kept message i as prune will leave it."""
        message = plan.original[i]
        if i in demoted:
            return self.counter.count_message(cleared_tool_output(message))
        if i in plan.pruned:
            return self.counter.count_message(fit_pruned(message, plan.settings))
        keep = dict(plan.shorten).get(i)
        if keep is not None:
            return self.counter.count_message(shortened_tool_output(message, keep))
        return plan.counts[i]

    def kept(self, plan: Plan) -> list[int]:
        return [*range(plan.head_end), *range(plan.tail_start, len(plan.original))]

    def between(self, plan: Plan) -> int:
        """Tokens of what replaces the middle: the summary (its budget and wrapper), or the pruned middle."""
        if not plan.middle:
            return 0
        note = self.counter.count_text(COMPACTION_NOTE) + 2 \
            if plan.original and role(plan.original[0]) == "system" and plan.previous_summary is None else 0
        if not self.summarizes:
            return note + sum(self.counter.count_message(pruned_message(m, plan)) for m in plan.middle)
        wrapper = self.counter.count_message(summary_message("", plan.summary_role or "user", len(plan.middle)))
        return note + wrapper + plan.summary_tokens

    def predict(self, plan: Plan) -> int:
        demoted = set(demoted_in_tail(plan))
        return sum(self.tokens_of(plan, i, demoted) for i in self.kept(plan)) + self.between(plan)

    # -- shrinking ----------------------------------------------------------------------

    def fit(self, plan: Plan, slack: int = 0) -> Fitting:
        """The plan shrunk (in the module's order) until its predicted output is within the limit less `slack`."""
        budget = self.limit - slack
        actions: Counter = Counter()
        if not self.checks:
            return Fitting(plan, 0, actions)
        predicted = self.predict(plan)
        if predicted <= budget:
            return Fitting(plan, predicted, actions)
        plan, predicted = self._cut_summary(plan, predicted, budget, plan.budgets.max_summary_tokens, actions)
        if predicted <= budget:
            return Fitting(plan, predicted, +actions)
        plan, predicted = self._prune(plan, budget)
        if predicted > budget:
            plan, predicted, actions["fit_tail_lowered"] = self._lower_tail(plan, budget)
        if predicted > budget:
            plan, predicted = self._shorten(plan, budget)
        if predicted > budget:
            plan, predicted = self._cut_summary(plan, predicted, budget, MIN_SUMMARY_TOKENS, actions)
        return Fitting(plan, predicted, +actions)

    def _cut_summary(self, plan: Plan, predicted: int, budget: int, down_to: int,
                     actions: Counter) -> tuple[Plan, int]:
        """The summary's budget lowered by what is over, not below `down_to`."""
        if not (plan.middle and self.summarizes):
            return plan, predicted
        cut = min(predicted - budget, plan.summary_tokens - down_to)
        if cut <= 0:
            return plan, predicted
        actions["fit_summary_budget_cut"] += cut
        plan = replace(plan, summary_budget=plan.summary_tokens - cut)
        return plan, self.predict(plan)

    def _prune(self, plan: Plan, budget: int) -> tuple[Plan, int]:
        """Prune old head and tail messages as the middle is, oldest first, until the prediction fits."""
        protected = last_exchange(list(plan.original))
        demoted = set(demoted_in_tail(plan))
        pruned = set(plan.pruned)
        predicted = self.predict(plan)
        for i in self.kept(plan):
            if predicted <= budget:
                break
            if i in protected or i in demoted or i in pruned:
                continue
            smaller = self.counter.count_message(fit_pruned(plan.original[i], plan.settings))
            if smaller < plan.counts[i]:
                pruned.add(i)
                predicted -= plan.counts[i] - smaller
        plan = replace(plan, pruned=frozenset(pruned))
        return plan, self.predict(plan)

    def _lower_tail(self, plan: Plan, budget: int) -> tuple[Plan, int, int]:
        """The longest tail from a later turn start, down to the latest user message, whose output fits; or the
        shortest one. Returns (plan, predicted, messages moved from the tail into the summarized middle)."""
        messages = list(plan.original)
        floor = self._tail_floor(messages, plan.tail_start)
        best, best_predicted = plan, self.predict(plan)
        for start in range(plan.tail_start + 1, floor + 1):
            if is_tool_result(messages[start]):
                continue            # a tail starts at a turn, never between a call and its results
            lowered = make_plan(plan.conversation_id, messages, list(plan.counts), plan.budgets, plan.settings,
                                fixed_tail_start=start)
            if not isinstance(lowered, Plan) or lowered.tail_start <= best.tail_start:
                continue            # the summary role widened it back: no shorter than what we have
            kept = set(self.kept(lowered))
            cut_budget = None if plan.summary_budget is None else min(plan.summary_budget, lowered.summary_tokens)
            lowered = replace(lowered, pruned=frozenset(i for i in plan.pruned if i in kept), summary_budget=cut_budget)
            best, best_predicted = lowered, self.predict(lowered)
            if best_predicted <= budget:
                break
        return best, best_predicted, best.tail_start - plan.tail_start

    @staticmethod
    def _tail_floor(messages: list[dict], tail_start: int) -> int:
        """The latest start of a tail: the latest user message, or the final turn when that message is not in the
        tail (in the head, or already summarized: the plan's tail may not stretch that far back)."""
        latest_user = latest_user_index(messages)
        if latest_user is not None and latest_user >= tail_start:
            return latest_user
        return max(align_to_group_start(messages, len(messages) - 1), tail_start) if messages else tail_start

    def _shorten(self, plan: Plan, budget: int) -> tuple[Plan, int]:
        """Shorten the largest kept tool outputs, with a marker, until the prediction fits."""
        demoted = set(demoted_in_tail(plan))
        shorten = dict(plan.shorten)
        predicted = self.predict(plan)
        for _ in range(SHORTEN_ROUNDS):
            candidates = sorted(
                ((self.tokens_of(replace(plan, shorten=tuple(shorten.items())), i, demoted), i)
                 for i in self.kept(plan)
                 if is_output(plan.original[i]) and i not in plan.pruned and i not in demoted),
                reverse=True)
            for tokens, i in candidates:
                if predicted <= budget:
                    break
                if tokens <= MIN_SHORTENED_TOKENS * 1.1:
                    break           # largest first: the rest are small too
                goal = max(tokens - (predicted - budget), MIN_SHORTENED_TOKENS)
                text_length = len(output_text(plan.original[i]))
                current = shorten.get(i, text_length)
                shorten[i] = max(int(current * goal / tokens), 1)
                predicted = self.predict(replace(plan, shorten=tuple(sorted(shorten.items()))))
            if predicted <= budget:
                break
        plan = replace(plan, shorten=tuple(sorted(shorten.items())))
        return plan, self.predict(plan)

    # -- why not ------------------------------------------------------------------------

    def why_not(self, plan: Plan, output_tokens: int) -> str:
        """Why an output of `output_tokens` does not fit, naming its largest part."""
        messages = list(plan.original)
        demoted = set(demoted_in_tail(plan))
        latest_user = latest_user_index(messages)
        parts: Counter = Counter()
        for i in self.kept(plan):
            if i == latest_user:
                part = "the latest user message"
            elif i < plan.head_end:
                part = "the head (system prompt and first exchange)"
            elif latest_user is not None and i > latest_user:
                part = "the answer to the latest user message"
            else:
                part = "the rest of the kept tail"
            parts[part] += self.tokens_of(plan, i, demoted)
        parts["the summary"] += self.between(plan)
        name, size = parts.most_common(1)[0]
        alone = " alone" if size > self.limit else ""
        return (f"{output_tokens:,} tokens after every step to fit, over the {self.limit:,} allowed: "
                f"{name}{alone} is {size:,}")
