"""The built-in lossy engine: decide, plan once, run the stage chain (SPEC §2, §4)."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

from hermes_pipeline.config import ConfigError
from hermes_pipeline.engine.base import Compaction, ContextEngine, EngineServices, Outcome
from hermes_pipeline.engine.hygiene import hygiene_fires
from hermes_pipeline.engine.plan import Plan
from hermes_pipeline.stages.base import Draft
from hermes_pipeline.tool_output import forget_texts
from hermes_pipeline.transcript import Conversation, is_summary_message
from hermes_pipeline.usage import prompt_tokens

if TYPE_CHECKING:
    from hermes_pipeline.engine.fit import Fitting


def check_chain(stages) -> None:
    """Stages run in SPEC order (prune before assembly, cache marks last)."""
    phases = [getattr(stage, "phase", 0) for stage in stages]
    if phases != sorted(phases):
        order = " -> ".join(getattr(stage, "name", type(stage).__name__) for stage in stages)
        raise ConfigError(f"pipeline.stages out of order ({order}): the order is prune -> summarize -> "
                          "assemble -> cache_mark -> quality (boundaries are planned once, before the stages)")


NOTHING_NEW = "nothing new to summarize: the middle is the earlier summary alone"
FIT_PASSES = 2   # a second pass when the output came out over the limit though its plan was predicted to fit
VERBATIM_PHASES = (3, 4, 6)     # the stages fit mode runs: summarize, assemble, quality


def make_fitter(services: EngineServices):
    """The fit check of the mode: the safety net's share (engine/fit.py), or training data's target
    (engine/fit_mode.py). Imported here: both use the stages, which import this package."""
    limit = services.budgets.fit_tokens
    summarizes = any(getattr(stage, "phase", 0) == 3 for stage in services.stages)   # else the pruned middle stays
    if services.settings.mode == "fit":
        if not summarizes:
            raise ConfigError("compression.mode=fit needs a summarize stage (pipeline=default)")
        from hermes_pipeline.engine.fit_mode import SpanFitter
        return SpanFitter(services.tools.counter, limit, services.settings.target_protect_last_n)
    from hermes_pipeline.engine.fit import Fitter
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
        check_chain(services.stages)
        self.services = services
        self.budgets = services.budgets
        self.counter = services.tools.counter
        self.last_prompt_tokens: int | None = None
        self.fitter = make_fitter(services)
        # fit mode keeps every kept message as it is: no pruning, no cache markers
        self.stages = tuple(s for s in services.stages if getattr(s, "phase", 0) in VERBATIM_PHASES) \
            if self.fitter.verbatim else services.stages

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
        draft, fitting, stats, spent = self._run_stages(plan, fitting)
        output = list(draft.messages)
        summary = draft.summary
        if summary is not None and spent:
            summary = add_spent(summary, spent)
        after = self._count_output(messages, counts, output)
        if after >= before:   # a summary longer than what it replaced: the input stays as it is
            return unchanged(f"compacting would not make it smaller ({before:,} -> {after:,} tokens)", summary)
        fits = self._fits(after)
        # which messages the summary replaced (of the conversation as read and repaired): hermes-pipeline-show
        removed = {"removed_span": [fitting.plan.head_end, fitting.plan.tail_start]}
        return Compaction(output, Outcome(
            True, trigger, before, after, self.name, summary,
            self.counter.count_text(summary.text) if summary else 0, None, dict(stats), draft.quality, removed,
            fits=fits, fit_reason=None if fits in (True, None) else self.fitter.why_not(fitting.plan, after)), counts)

    def _fits(self, tokens: int) -> bool | None:
        return tokens <= self.fitter.limit if self.fitter.checks else None

    def _run_stages(self, plan: Plan, fitting: Fitting):
        """The stage chain on the fitted plan; once more, with the prediction's miss as slack, when the output
        came out over the limit (a model's summary may be longer than its budget). The draft, the fitting it
        ran on, its stats, and the summaries of the passes that were not kept."""
        spent = []
        for attempt in range(FIT_PASSES):
            stats: Counter = Counter(fitting.actions)
            if attempt:
                stats["fit_passes"] = attempt + 1
            if fitting.plan.tail_widened:
                stats["tail_widened_for_roles"] = fitting.plan.tail_widened
            draft = Draft(fitting.plan.original)
            try:
                for stage in self.stages:
                    draft = stage.apply(draft, fitting.plan, self.services.tools, stats)
            finally:
                forget_texts()
            if not draft.assembled:
                raise ConfigError("pipeline.stages has no assemble stage: nothing would be written")
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
        return draft, fitting, stats, spent

    def _count_output(self, messages: list[dict], counts: list[int], output: list[dict]) -> int:
        """Tokens of the output; messages passed through untouched keep their known count."""
        known = {id(m): c for m, c in zip(messages, counts)}
        count = self.counter.count_message
        return sum(known[id(m)] if id(m) in known else count(m) for m in output)
