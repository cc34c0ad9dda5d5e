"""Engines written for the Hermes agent, run unmodified.

Hermes' own ABC (`agent.context_engine.ContextEngine`, in hermes-agent) works on
an OpenAI message list: `compress(messages) -> messages`,
`should_compress(prompt_tokens)`, `update_from_response(usage)`, `name`, and
session hooks. `HermesEngine` is one of our engines around such an engine. For
each conversation it takes a fresh one (a deep copy of a registered instance, as
Hermes copies its plugin engine for each agent, or a new object of the class),
tells it the model and context (`update_model`, as Hermes does for a plugin
engine), asks it whether to compact, hands it the conversation's messages (a
copy: the input is never changed) and takes the list back. What comes back must
be valid messages with every tool call paired with its result, else the
conversation fails (quarantined); it is scored like any compaction, from the
messages it no longer holds.
"""
from __future__ import annotations

import copy
import functools
import inspect
import json
import logging
from difflib import SequenceMatcher
from functools import partial
from pathlib import Path
from typing import Any, Callable

from hermes_pipeline.analysis.probes import extract_probes
from hermes_pipeline.analysis.text_memo import TextMemo
from hermes_pipeline.engine.base import Compaction, ContextEngine, EngineServices, Outcome
from hermes_pipeline.engine.safety_net import hygiene_fires
from hermes_pipeline.formats.base import bad_content_reason
from hermes_pipeline.stages.score import rate
from hermes_pipeline.summarizers.base import SummaryResult
from hermes_pipeline.transcript import Conversation, message_text, pairing_problems

log = logging.getLogger(__name__)
# Hermes flags its summary message with this key; "_" keys are in-process only to Hermes
# (its wire sanitizers strip them), so the flag is read here and not written out.
SUMMARY_FLAG = "_compressed_summary"
PLATFORM = "hermes-pipeline"
INSTALL = "pip install 'hermes-pipeline[hermes]'"   # the extra that brings hermes-agent
PAIRING_SHOWN = 3


class EngineOutputError(ValueError):
    """An engine returned something that is not a conversation an agent could load."""


@functools.cache
def hermes_abc() -> type | None:
    """Hermes' ContextEngine ABC, or None when hermes-agent is not installed."""
    try:
        from agent.context_engine import ContextEngine as HermesContextEngine
    except ImportError:
        return None
    return HermesContextEngine


def written_for_hermes(value: Any) -> bool:
    """An instance or a concrete subclass of Hermes' ContextEngine."""
    abc = hermes_abc()
    if abc is None:
        return False
    if inspect.isclass(value):
        return issubclass(value, abc) and value is not abc and not inspect.isabstract(value)
    return isinstance(value, abc)


def hermes_factory(name: str, engine: Any) -> Callable[..., ContextEngine]:
    """Our factory `factory(services, **options)` for a Hermes engine instance or class."""
    make = engine if inspect.isclass(engine) else partial(copy.deepcopy, engine)

    def factory(services: EngineServices, **options: Any) -> ContextEngine:
        if options:
            raise TypeError(f"an engine written for the Hermes agent takes no context.options "
                            f"(got {', '.join(sorted(options))})")
        return HermesEngine(services, name, make)
    return factory


def supported_kwargs(function: Callable, **candidates: Any) -> dict:
    """The optional arguments of `compress` that this engine's signature takes (Hermes filters them so)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return candidates
    return {key: value for key, value in candidates.items() if key in parameters}


def _key(message: Any) -> str:
    if not isinstance(message, dict):
        return repr(message)
    return json.dumps({k: v for k, v in message.items() if not str(k).startswith("_")},
                      sort_keys=True, ensure_ascii=False, default=str)


def removed_indices(original: list[dict], output: list[dict]) -> list[int]:
    """Input messages the output no longer holds as they were (matched in order, by content)."""
    matcher = SequenceMatcher(None, [_key(m) for m in original], [_key(m) for m in output], autojunk=False)
    kept = {i for block in matcher.get_matching_blocks() for i in range(block.a, block.a + block.size)}
    return [i for i in range(len(original)) if i not in kept]


def output_problem(output: Any) -> str | None:
    """Why a returned list is not a conversation to write, or None."""
    if not isinstance(output, list):
        return f"returned a {type(output).__name__}, not a list of messages"
    for index, message in enumerate(output):
        reason = bad_content_reason(message, index)
        if reason:
            return reason
    problems = pairing_problems(output)
    if problems:
        more = f" (and {len(problems) - PAIRING_SHOWN} more)" if len(problems) > PAIRING_SHOWN else ""
        return "tool calls and results not paired: " + "; ".join(problems[:PAIRING_SHOWN]) + more
    return None


def _notify(hook: Callable, *args: Any, **kwargs: Any) -> None:
    """A session hook; Hermes goes on when one fails, and so does the run (with a warning)."""
    try:
        hook(*args, **kwargs)
    except Exception as error:
        log.warning("%s failed: %s: %s", getattr(hook, "__qualname__", hook), type(error).__name__, error)


class HermesEngine(ContextEngine):
    """One of our engines around an engine written for Hermes' ABC; `name` is the configured name."""

    def __init__(self, services: EngineServices, name: str, make: Callable[[], Any]):
        self.services = services
        self.name = name
        self.make = make
        self.counter = services.tools.counter
        self.prototype = self._fresh()     # a plugin that cannot be built fails at start-up

    def _fresh(self) -> Any:
        engine = self.make()
        self.prepare(engine)
        return engine

    def prepare(self, engine: Any) -> None:
        """What Hermes tells a plugin engine once the agent knows its model (agent_init.py)."""
        engine.update_model(model=self.services.model_name, context_length=self.services.budgets.context_length)

    def should_compress(self, prompt_tokens: int) -> bool:
        return self.services.enabled and bool(self.prototype.should_compress(prompt_tokens))

    def tools(self) -> list[dict]:
        return list(self.prototype.get_tool_schemas() or [])

    def trigger_for(self, engine: Any, conversation: Conversation, tokens: int) -> tuple[str, str | None]:
        """The safety net first (it runs before the agent), then the engine's own decision."""
        messages, recorded = conversation.messages, conversation.recorded_prompt_tokens
        if not self.services.enabled:
            return "none", "compression disabled (compression.enabled=false)"
        budgets = self.services.budgets
        if hygiene_fires(messages, recorded, budgets.hygiene_tokens, self.services.hygiene_min_messages, True):
            return "hygiene", None
        if recorded is not None:    # what an API response reported last, as Hermes passes it on
            engine.update_from_response({"prompt_tokens": recorded, "completion_tokens": 0, "total_tokens": recorded})
        if engine.should_compress(tokens):
            return "agent", None
        threshold = getattr(engine, "threshold_tokens", 0)
        return "none", (f"engine {self.name}: should_compress({tokens:,}) said no"
                        + (f" (its threshold_tokens: {threshold:,})" if threshold else ""))

    def compress(self, conversation: Conversation) -> Compaction:
        messages = conversation.messages
        counts = self.counter.count_messages(messages)
        before = sum(counts)
        engine = self._fresh()
        self.begin(engine, conversation)
        _notify(engine.on_session_start, conversation.id, hermes_home=str(Path(self.services.store_dir).resolve()),
                platform=PLATFORM, model=self.services.model_name,
                context_length=self.services.budgets.context_length, conversation_id=conversation.id)
        trigger, why_not = self.trigger_for(engine, conversation, before)
        if trigger == "none":
            _notify(engine.on_session_end, conversation.id, messages)
            return Compaction(messages, Outcome(False, trigger, before, before, self.name, noop_reason=why_not), counts)
        output = engine.compress(copy.deepcopy(messages),
                                 **supported_kwargs(engine.compress, current_tokens=before, focus_topic=None,
                                                    force=False))
        _notify(engine.on_session_end, conversation.id, output)
        self.check_call(engine)
        problem = output_problem(output)
        if problem:
            raise EngineOutputError(f"engine {self.name} {problem}")
        removed = removed_indices(messages, output)
        if not removed and len(output) == len(messages):
            return Compaction(messages, Outcome(False, trigger, before, before, self.name,
                                                noop_reason=self.why_unchanged(engine)), counts)
        summaries = [message_text(m) for m in output if m.get(SUMMARY_FLAG)]
        output = [{k: v for k, v in m.items() if k != SUMMARY_FLAG} for m in output]
        with TextMemo():         # the probes and the score read the same texts
            quality = rate(extract_probes(messages, removed, max_errors=None), output)
        summary = self.summary_of(engine, "\n\n".join(summaries)) if summaries else None
        after = sum(self.counter.count_message(m) for m in output)
        return Compaction(output, Outcome(
            True, trigger, before, after, self.name, summary,
            sum(self.counter.count_text(text) for text in summaries), None,
            {"messages_removed": len(removed)}, quality), counts)

    # ---- what a subclass knows about its engine (engine=hermes) ------------
    def begin(self, engine: Any, conversation: Conversation) -> None:
        """Anything a subclass gives its fresh engine for this conversation; nothing for a plugin."""

    def check_call(self, engine: Any) -> None:
        """Raise what must stop the run after a compress() call; nothing for a plugin."""

    def why_unchanged(self, engine: Any) -> str:
        return f"engine {self.name} returned the conversation unchanged"

    def summary_of(self, engine: Any, text: str) -> SummaryResult | None:
        """The row's summary fields for the summary message(s) the engine flagged."""
        return SummaryResult(text=text, summarizer=self.name)
