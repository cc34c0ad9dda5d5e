"""The built-in lossy engine: runs the configured stage chain on one conversation."""
from __future__ import annotations

from dataclasses import dataclass, field

from hermes_pipeline.budget import Budgets
from hermes_pipeline.engine.base import ContextEngine
from hermes_pipeline.engine.hygiene import hygiene_fires
from hermes_pipeline.stages.base import CompactionState, EngineContext, Settings, Stage
from hermes_pipeline.summarizers.base import SummaryResult
from hermes_pipeline.transcript import Conversation


@dataclass
class CompactionOutcome:
    messages: list[dict]
    trigger: str                     # "hygiene" | "agent" | "none"
    compacted: bool
    tokens_before: int
    tokens_after: int
    summary: SummaryResult | None = None
    summary_tokens: int = 0
    noop_reason: str | None = None
    stats: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    counts: list[int] | None = None  # per-message tokens of the input, reused by the replay


class ContextCompressor(ContextEngine):
    name = "compressor"

    def __init__(self, stages: list[Stage], budgets: Budgets, settings: Settings, context: EngineContext,
                 enabled: bool = True, hygiene_min_messages: int = 4):
        self.stages = stages
        self.budgets = budgets
        self.settings = settings
        self.context = context
        self.enabled = enabled
        self.hygiene_min_messages = hygiene_min_messages
        self.last_prompt_tokens: int | None = None

    def should_compress(self, prompt_tokens: int) -> bool:
        return self.enabled and prompt_tokens >= self.budgets.threshold_tokens

    def update_from_response(self, usage: dict) -> None:
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        if isinstance(prompt, int):
            cached = sum(usage.get(k) or 0 for k in ("cache_read_input_tokens", "cache_creation_input_tokens"))
            self.last_prompt_tokens = prompt + cached

    def compress(self, messages: list[dict]) -> list[dict]:
        return self._run_chain("conversation", messages, self.context.counter.count_messages(messages)).output

    def trigger_for(self, messages: list[dict], counts: list[int], recorded: int | None) -> str:
        """Which layer fires: the hygiene safety net is checked first, as it runs before the agent."""
        if hygiene_fires(messages, recorded, self.budgets.hygiene_tokens, self.hygiene_min_messages, self.enabled):
            return "hygiene"
        if self.should_compress(sum(counts)):
            return "agent"
        return "none"

    def compact(self, conversation: Conversation) -> CompactionOutcome:
        messages = conversation.messages
        counts = self.context.counter.count_messages(messages)
        before = sum(counts)
        trigger = self.trigger_for(messages, counts, conversation.recorded_prompt_tokens)
        if trigger == "none":
            return CompactionOutcome(messages, "none", False, before, before, counts=counts)
        state = self._run_chain(conversation.id, messages, counts)
        if state.noop_reason:
            return CompactionOutcome(messages, trigger, False, before, before,
                                     noop_reason=state.noop_reason, stats=state.stats, counts=counts)
        after = self._count_output(messages, counts, state.output)
        summary_tokens = self.context.counter.count_text(state.summary.text) if state.summary else 0
        return CompactionOutcome(state.output, trigger, True, before, after, state.summary,
                                 summary_tokens, None, state.stats, counts=counts)

    def _count_output(self, messages: list[dict], counts: list[int], output: list[dict]) -> int:
        """Tokens of the output; messages passed through untouched keep their known count."""
        known = {id(m): c for m, c in zip(messages, counts)}
        count = self.context.counter.count_message
        return sum(known[id(m)] if id(m) in known else count(m) for m in output)

    def _run_chain(self, conversation_id: str, messages: list[dict], counts: list[int]) -> CompactionState:
        state = CompactionState(conversation_id, messages, counts, self.budgets, self.settings)
        for stage in self.stages:
            stage.run(state, self.context)
        if state.output is None:
            state.output = list(messages)
        return state
