"""The built-in lossy engine: decide, plan once, run the stage chain (SPEC §2, §4)."""
from __future__ import annotations

from collections import Counter

from hermes_pipeline.config import ConfigError
from hermes_pipeline.engine.base import Compaction, ContextEngine, EngineServices, Outcome
from hermes_pipeline.engine.hygiene import hygiene_fires
from hermes_pipeline.engine.plan import Plan, make_plan
from hermes_pipeline.stages.base import Draft
from hermes_pipeline.tool_output import forget_texts
from hermes_pipeline.transcript import Conversation, is_summary_message
from hermes_pipeline.usage import prompt_tokens


def check_chain(stages) -> None:
    """Stages run in SPEC order (prune before assembly, cache marks last)."""
    phases = [getattr(stage, "phase", 0) for stage in stages]
    if phases != sorted(phases):
        order = " -> ".join(getattr(stage, "name", type(stage).__name__) for stage in stages)
        raise ConfigError(f"pipeline.stages out of order ({order}): the order is prune -> summarize -> "
                          "assemble -> cache_mark -> quality (boundaries are planned once, before the stages)")


NOTHING_NEW = "nothing new to summarize: the middle is the earlier summary alone"


class ContextCompressor(ContextEngine):
    name = "compressor"

    def __init__(self, services: EngineServices):
        check_chain(services.stages)
        self.services = services
        self.budgets = services.budgets
        self.counter = services.tools.counter
        self.last_prompt_tokens: int | None = None

    def should_compress(self, prompt_tokens: int) -> bool:
        return self.services.enabled and prompt_tokens >= self.budgets.threshold_tokens

    def update_from_response(self, usage: dict) -> None:
        self.last_prompt_tokens = prompt_tokens(usage)

    def trigger_for(self, conversation: Conversation, tokens: int) -> tuple[str, str | None]:
        """Which layer fires, or why none does (in plain words for the manifest).

        The hygiene safety net is checked first, as it runs before the agent.
        """
        messages, recorded = conversation.messages, conversation.recorded_prompt_tokens
        if not self.services.enabled:
            return "none", "compression disabled (compression.enabled=false)"
        if hygiene_fires(messages, recorded, self.budgets.hygiene_tokens, self.services.hygiene_min_messages, True):
            return "hygiene", None
        if self.should_compress(tokens):
            return "agent", None
        why = f"below threshold: {tokens:,} of {self.budgets.threshold_tokens:,} tokens"
        minimum = self.services.hygiene_min_messages
        if recorded is not None and recorded >= self.budgets.hygiene_tokens and len(messages) < minimum:
            why += (f"; recorded usage {recorded:,} is over the safety net's {self.budgets.hygiene_tokens:,}, "
                    f"but it needs at least {minimum} messages (this has {len(messages)})")
        elif recorded is not None:
            why += f"; recorded usage {recorded:,} is below the safety net's {self.budgets.hygiene_tokens:,}"
        return "none", why

    def compress(self, conversation: Conversation) -> Compaction:
        messages = conversation.messages
        counts = self.counter.count_messages(messages)
        before = sum(counts)
        trigger, why_not = self.trigger_for(conversation, before)
        unchanged = lambda why: Compaction(messages, Outcome(
            False, trigger, before, before, self.name, noop_reason=why), counts)
        if trigger == "none":
            return unchanged(why_not)
        plan = make_plan(conversation.id, messages, counts, self.budgets, self.services.settings)
        if not isinstance(plan, Plan):
            return unchanged(plan)
        if all(is_summary_message(m) for m in plan.middle):
            return unchanged(NOTHING_NEW)    # a summary of the summary would only lose what it says
        stats: Counter = Counter()
        if plan.tail_widened:
            stats["tail_widened_for_roles"] = plan.tail_widened
        draft = Draft(plan.original)
        try:
            for stage in self.services.stages:
                draft = stage.apply(draft, plan, self.services.tools, stats)
        finally:
            forget_texts()
        if not draft.assembled:
            raise ConfigError("pipeline.stages has no assemble stage: nothing would be written")
        output = list(draft.messages)
        summary = draft.summary
        after = self._count_output(messages, counts, output)
        if after >= before:   # a summary longer than what it replaced: the input stays as it is
            return Compaction(messages, Outcome(
                False, trigger, before, before, self.name, summary, 0,
                f"compacting would not make it smaller ({before:,} -> {after:,} tokens)"), counts)
        # which messages the summary replaced (of the conversation as read and repaired): hermes-pipeline-show
        removed = {"removed_span": [plan.head_end, plan.tail_start]}
        return Compaction(output, Outcome(
            True, trigger, before, after, self.name, summary,
            self.counter.count_text(summary.text) if summary else 0, None, dict(stats), draft.quality, removed), counts)

    def _count_output(self, messages: list[dict], counts: list[int], output: list[dict]) -> int:
        """Tokens of the output; messages passed through untouched keep their known count."""
        known = {id(m): c for m, c in zip(messages, counts)}
        count = self.counter.count_message
        return sum(known[id(m)] if id(m) in known else count(m) for m in output)
