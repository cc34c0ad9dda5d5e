"""The built-in lossy engine: decide, plan once, run the stage chain."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

from hermes_pipeline.analysis.conversation import ConversationAnalysis
from hermes_pipeline.config import ConfigError
from hermes_pipeline.engine.base import Compaction, ContextEngine, EngineServices, Outcome
from hermes_pipeline.engine.safety_net import hygiene_fires
from hermes_pipeline.stages.base import SUMMARY, Draft
from hermes_pipeline.stages.chain import StageChain
from hermes_pipeline.stages.plan import Plan
from hermes_pipeline.transcript import Conversation, is_summary_message
from hermes_pipeline.usage import prompt_tokens

if TYPE_CHECKING:
    from hermes_pipeline.engine.context_fit import Fitting


NOTHING_NEW = "nothing new to summarize: the middle is the earlier summary alone"
FIT_PASSES = 2   # a second pass when the output came out over the limit though its plan was predicted to fit
PLAN = "plan"    # the engine's own entry beside the stages': token counts, trigger, plan and fit step


def make_fitter(services: EngineServices, chain: StageChain):
    """The fit check of the mode: the safety net's share (engine/context_fit.py), or training data's target
    (engine/target_fit.py). Imported here: both use the stages, which import this package."""
    limit = services.budgets.fit_tokens
    summarizes = chain.provides(SUMMARY)   # else the pruned middle stays
    if services.settings.mode == "fit":
        if not summarizes:
            raise ConfigError("compression.mode=fit needs a summarize stage (pipeline=default)")
        from hermes_pipeline.engine.target_fit import SpanFitter
        return SpanFitter(services.tools.counter, limit, services.settings.target_protect_last_n)
    from hermes_pipeline.engine.context_fit import Fitter
    return Fitter(services.tools.counter, limit, summarizes)


def add_spent(summary, spent: list):
    """The kept summary, charged with what the passes before it cost (their calls were made too)."""
    usage = Counter(summary.usage)
    for earlier in spent:
        usage.update({k: v for k, v in earlier.usage.items() if isinstance(v, int)})
    return replace(summary, usage=dict(usage), calls=summary.calls + sum(e.calls for e in spent),
                   retries=summary.retries + sum(e.retries for e in spent))


class ContextCompressor(ContextEngine):
    name = "compressor"

    def __init__(self, services: EngineServices):
        chain = StageChain(services.stages)      # a chain that cannot work is a config error, here
        self.services = services
        self.budgets = services.budgets
        self.counter = services.tools.counter
        self.last_prompt_tokens: int | None = None
        self.fitter = make_fitter(services, chain)
        # fit mode keeps every kept message as it is: no pruning, no cache markers
        self.chain = chain.verbatim() if self.fitter.verbatim else chain

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
        if self.fitter.verbatim:       # fit mode: the target alone decides
            if tokens > self.fitter.limit:
                return "target", None
            return "none", f"under the target: {tokens:,} of {self.fitter.limit:,} tokens"
        if hygiene_fires(messages, recorded, self.budgets.hygiene_tokens, self.services.hygiene_min_messages, True):
            return "hygiene", None
        if self.should_compress(tokens):
            return "agent", None
        if self.fitter.checks and tokens > self.fitter.limit:
            return "hygiene", None   # the exact count is over the safety net's share, whatever the log recorded
        why = f"below threshold: {tokens:,} of {self.budgets.threshold_tokens:,} tokens"
        minimum = self.services.hygiene_min_messages
        if recorded is not None and recorded >= self.budgets.hygiene_tokens and len(messages) < minimum:
            why += (f"; recorded usage {recorded:,} is over the safety net's {self.budgets.hygiene_tokens:,}, "
                    f"but it needs at least {minimum} messages (this has {len(messages)})")
        elif recorded is not None:
            why += f"; recorded usage {recorded:,} is below the safety net's {self.budgets.hygiene_tokens:,}"
        return "none", why

    def compress(self, conversation: Conversation) -> Compaction:
        """The compaction, with each stage's counts and CPU seconds, and the plan's (the rest of the time)."""
        started = time.thread_time()
        compaction = self._compress(conversation)
        stages = compaction.outcome.stages
        in_stages = sum(entry.get("seconds", 0.0) for entry in stages.values())
        stages.setdefault(PLAN, {})["seconds"] = time.thread_time() - started - in_stages
        return compaction

    def _compress(self, conversation: Conversation) -> Compaction:
        messages = conversation.messages
        counts = self.counter.count_messages(messages)
        before = sum(counts)
        trigger, why_not = self.trigger_for(conversation, before)
        over = self.fitter.checks and before > self.fitter.limit
        unchanged = lambda why, summary=None, fit_reason=None: Compaction(messages, Outcome(
            False, trigger, before, before, self.name, summary, noop_reason=why, fits=self._fits(before),
            fit_reason=(fit_reason or why) if over else None), counts)
        if trigger == "none":
            return unchanged(why_not)
        plan = self.fitter.plan(conversation.id, messages, counts, self.budgets, self.services.settings, over)
        if not isinstance(plan, Plan):
            return unchanged(plan)
        if plan.middle and all(is_summary_message(m) for m in plan.middle) and not over:
            return unchanged(NOTHING_NEW)    # a summary of the summary would only lose what it says
        fitting = self.fitter.fit(plan)
        if not fitting.plan.middle and fitting.predicted >= before:
            why = self.fitter.why_not(fitting.plan, before)
            return unchanged(f"does not fit, and nothing can be shrunk: {why}", fit_reason=why)
        draft, fitting, stats, stages, spent = self._run_stages(plan, fitting)
        output = list(draft.messages)
        summary = draft.summary
        if summary is not None and spent:
            summary = add_spent(summary, spent)
        after = self._count_output(messages, counts, output)
        if after >= before:   # a summary longer than what it replaced: the input stays as it is
            kept = unchanged(f"compacting would not make it smaller ({before:,} -> {after:,} tokens)", summary)
            kept.outcome.stages = stages     # the stages ran: their time was spent
            return kept
        fits = self._fits(after)
        # which messages the summary replaced (of the conversation as read and repaired): hermes-pipeline-show
        removed = {"removed_span": [fitting.plan.head_end, fitting.plan.tail_start]}
        return Compaction(output, Outcome(
            True, trigger, before, after, self.name, summary,
            self.counter.count_text(summary.text) if summary else 0, None, dict(stats), draft.quality, removed,
            fits=fits, fit_reason=None if fits in (True, None) else self.fitter.why_not(fitting.plan, after),
            stages=stages), counts)

    def _fits(self, tokens: int) -> bool | None:
        return tokens <= self.fitter.limit if self.fitter.checks else None

    def _run_stages(self, plan: Plan, fitting: Fitting):
        """The stage chain on the fitted plan; once more, with the prediction's miss as slack, when the output
        came out over the limit (a model's summary may be longer than its budget). The draft, the fitting it
        ran on, the row's stats, each stage's counts and seconds (both passes), and the summaries of the passes
        that were not kept."""
        spent = []
        seconds: Counter = Counter()       # each stage's time over both passes; its counts are the kept pass's
        analysis = ConversationAnalysis()
        for attempt in range(FIT_PASSES):
            plan_counts: Counter = Counter(fitting.actions)
            if attempt:
                plan_counts["fit_passes"] = attempt + 1
            if fitting.plan.tail_widened:
                plan_counts["tail_widened_for_roles"] = fitting.plan.tail_widened
            with analysis.texts:        # what the stages read off the texts, remembered for this conversation
                draft, per_stage = self.chain.run(Draft(fitting.plan.original, analysis), fitting.plan)
            for name, entry in per_stage.items():
                seconds[name] += entry["seconds"]
            if not self.fitter.checks or attempt == FIT_PASSES - 1:
                break
            miss = self._count_output(list(plan.original), list(plan.counts), list(draft.messages)) - fitting.predicted
            if miss <= 0 or fitting.predicted + miss <= self.fitter.limit:
                break               # it fits, or the plan was shrunk as far as it goes
            refit = self.fitter.fit(plan, slack=miss)
            if refit.key == fitting.key:
                break
            if draft.summary is not None:
                spent.append(draft.summary)
            fitting = refit
        stats = Counter(plan_counts)       # the row's stats: the plan's and every stage's counts, added up
        stages = {PLAN: dict(plan_counts)}
        for name, entry in per_stage.items():
            counts = {k: v for k, v in entry.items() if k != "seconds"}
            stats.update(counts)
            stages[name] = {**counts, "seconds": seconds[name]}
        return draft, fitting, stats, stages, spent

    def _count_output(self, messages: list[dict], counts: list[int], output: list[dict]) -> int:
        """Tokens of the output; messages passed through untouched keep their known count."""
        known = {id(m): c for m, c in zip(messages, counts)}
        count = self.counter.count_message
        return sum(known[id(m)] if id(m) in known else count(m) for m in output)
