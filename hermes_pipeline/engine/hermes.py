"""engine=hermes: the Hermes agent's own ContextCompressor (hermes-agent, the optional [hermes] extra).

Hermes' compressor decides (`should_compress`, with its own threshold rules) and
compacts (prune, boundaries, structured summary, assembly, tool-pair sanitizing)
as it does in the agent; its code runs unmodified. Only the one name its summary
step looks up, `call_llm`, is bound to this run's summarizer (hermes_summary.py),
in a copy of that function: Hermes' module is left as it is.

Built from this run's config; conf/engine/hermes.yaml maps the keys:
  model.name, model.context_length    -> model, config_context_length
  compression.threshold               -> threshold_percent (Hermes raises it to 75% on a context under
                                         512K, and to 85% when its 64K floor would not fit the context)
  compression.target_ratio            -> summary_target_ratio (tail budget = its threshold x this)
  compression.protect_first_n / last_n -> protect_first_n (Hermes counts them after the system prompt) /
                                         protect_last_n
"""
from __future__ import annotations

import functools
import types
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Callable

from hermes_pipeline.analysis.probes import extract_probes
from hermes_pipeline.analysis.redact import redact_summary, strip_think
from hermes_pipeline.analysis.secret_scan import SecretScan
from hermes_pipeline.config import ConfigError
from hermes_pipeline.engine.base import ContextEngine, EngineServices
from hermes_pipeline.engine.hermes_abi import INSTALL, HermesEngine
from hermes_pipeline.engine.hermes_summary import summary_answer
from hermes_pipeline.summarizers.base import SummarizerFatalError, SummaryRequest, SummaryResult

NAME = "hermes"
# The compressor whose summary request is being answered, and the turns it summarizes (per thread).
_ANSWERING: ContextVar = ContextVar("hermes_summary_request")


def with_globals(function: Callable, **names: Any) -> Callable:
    """A copy of `function` in which the global `names` resolve to other objects."""
    namespace = {**function.__globals__, **names}
    copied = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                                function.__closure__)
    copied.__kwdefaults__ = function.__kwdefaults__
    return copied


def _reply(text: str) -> types.SimpleNamespace:
    """The shape Hermes reads a chat completion from: response.choices[0].message.content."""
    message = types.SimpleNamespace(role="assistant", content=text)
    return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message, finish_reason="stop")])


def _request_of(engine: Any, turns: list[dict]) -> SummaryRequest:
    """Our request for the turns Hermes summarizes: the same messages as they were before it pruned them."""
    original, pruned = engine.pruned_from or ([], [])
    start = next((i for i, m in enumerate(pruned) if turns and m is turns[0]), None)
    head, middle, probes = [], list(turns), None
    if start is not None and len(original) == len(pruned):
        end = start + len(turns)
        head, middle = original[:start], original[start:end]
        probes = extract_probes(original, range(start, end), max_errors=None)
    # read redacted, as the summarize stage gives them: no name gathered from them is a piece of a secret
    secrets = SecretScan(head + middle)
    head, middle = [secrets.clean(m) for m in head], [secrets.clean(m) for m in middle]
    return SummaryRequest(conversation_id=engine.conversation_id, middle=middle,
                          budget_tokens=engine._compute_summary_budget(turns), context_length=engine.context_length,
                          previous_summary=engine._previous_summary, head=head, probes=probes)


def _answer(*, messages: list[dict], **hermes_routing: Any) -> types.SimpleNamespace:
    """Hermes' `call_llm(task="compression", ...)`, answered by this run's summarizer."""
    engine, turns = _ANSWERING.get()
    try:
        result = engine.answer_with.answer(_request_of(engine, turns), messages)
    except SummarizerFatalError as error:   # Hermes catches every error here: the run is stopped after it
        engine.fatal = str(error)
        raise
    engine.answered = result
    return _reply(redact_summary(strip_think(result.text), (engine.pruned_from or ([], []))[0] or turns).strip())


@functools.cache
def routed_compressor() -> type:
    """Hermes' ContextCompressor with its summary request answered here."""
    try:
        from agent import context_compressor as hermes
    except ImportError as error:
        raise ConfigError(f"engine=hermes runs the Hermes agent's own ContextCompressor, and hermes-agent is not "
                          f"installed ({error}): {INSTALL}") from None
    generate = with_globals(hermes.ContextCompressor._generate_summary, call_llm=_answer)

    class RoutedCompressor(hermes.ContextCompressor):
        answer_with = None                  # SummarizerAnswer | EndpointAnswer, set when made
        conversation_id = ""
        pruned_from: tuple | None = None    # (messages given, messages pruned) of the last prune
        answered: SummaryResult | None = None
        fatal: str | None = None

        def _prune_old_tool_results(self, messages, *args, **kwargs):
            pruned, count = super()._prune_old_tool_results(messages, *args, **kwargs)
            self.pruned_from = (messages, pruned)
            return pruned, count

        def _generate_summary(self, turns_to_summarize, focus_topic=None, memory_context=""):
            token = _ANSWERING.set((self, turns_to_summarize))
            try:
                return generate(self, turns_to_summarize, focus_topic=focus_topic, memory_context=memory_context)
            finally:
                _ANSWERING.reset(token)

    return RoutedCompressor


class HermesCompressorEngine(HermesEngine):
    """Hermes' compressor, one per conversation, built with this run's model and context."""

    def prepare(self, engine: Any) -> None:
        pass    # built with the run's model and context length: nothing more to tell it

    def begin(self, engine: Any, conversation) -> None:
        engine.conversation_id = conversation.id

    def check_call(self, engine: Any) -> None:
        if engine.fatal:
            raise SummarizerFatalError(engine.fatal)

    def why_unchanged(self, engine: Any) -> str:
        if engine._last_compress_aborted:
            return f"Hermes' compressor aborted: its summary failed ({engine._last_summary_error})"
        return "Hermes' compressor found nothing to compact (its head and tail cover the conversation)"

    def summary_of(self, engine: Any, text: str) -> SummaryResult | None:
        if engine.answered is None:   # Hermes wrote its own fallback summary, without a summarizer
            return SummaryResult(text=text, summarizer=NAME, fallback=f"Hermes' static fallback summary: "
                                                                       f"{engine._last_summary_error}")
        return replace(engine.answered, text=text)


def hermes_compressor(services: EngineServices, threshold_percent: float = 0.5, summary_target_ratio: float = 0.2,
                      protect_first_n: int = 3, protect_last_n: int = 20) -> ContextEngine:
    """The factory of engine=hermes (a ConfigError naming the extra when hermes-agent is absent)."""
    compressor = routed_compressor()
    answer_with = summary_answer(services.tools.summarizer)

    def make():
        engine = compressor(model=services.model_name or "unknown", threshold_percent=float(threshold_percent),
                            protect_first_n=int(protect_first_n), protect_last_n=int(protect_last_n),
                            summary_target_ratio=float(summary_target_ratio), quiet_mode=True,
                            config_context_length=int(services.budgets.context_length))
        engine.answer_with = answer_with
        return engine

    return HermesCompressorEngine(services, NAME, make)
