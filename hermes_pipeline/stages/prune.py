"""Phase 1: cheap pruning, no model call.

Outside the verbatim head and tail: long tool outputs become a placeholder,
long tool-call arguments are shortened while staying valid JSON,
and only the newest images are kept (§10). A tail that alone is far over its
budget gets its older tool outputs demoted too, keeping the last 3 messages
verbatim (§6): so that a tail which alone fills the context can still be compacted.
The fit step (engine/context_fit.py) may name more head and tail tool outputs to clear or
shorten, so that the output fits the context. A cleared head or tail output keeps
its error lines under the marker: the summary does not cover head and tail. The summarizer reads the unpruned originals.
"""
from __future__ import annotations

import json
from collections import Counter

from hermes_pipeline.analysis.tool_output import clip_verbatim, error_lines
from hermes_pipeline.config.schema import CompressionConfig
from hermes_pipeline.stages.base import SOURCE, Draft, Stage
from hermes_pipeline.stages.plan import Plan
from hermes_pipeline.transcript import (
    command_run,
    is_image_part,
    is_tool_result,
    message_text,
    tool_calls,
    with_command_output,
)

PRUNED_TOOL_OUTPUT = "[Old tool output cleared to save context space]"
IMAGE_PLACEHOLDER = "[Image removed to save context space]"
OVERSIZED_TAIL_FACTOR = 1.5
TAIL_KEPT_VERBATIM = 3
ARG_KEEP_CHARS = 1200
SHORTENED_MARK = "[... {cut:,} characters of this tool output cut so that the conversation fits the context ...]"
SHORTENED_HEAD_SHARE = 0.6   # of the characters kept: the start of the output; the rest from its end
CLEARED_ERRORS_KEPT, CLEARED_ERROR_CHARS = 12, 240     # a cleared head or tail output's error lines, kept
KEPT_ERRORS_LABEL = "Its error lines:"


def _shorten_leaves(value, limit: int):
    if isinstance(value, str) and len(value) > limit:
        return value[:ARG_KEEP_CHARS] + f"...[{len(value) - ARG_KEEP_CHARS} chars truncated]"
    if isinstance(value, dict):
        return {k: _shorten_leaves(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten_leaves(v, limit) for v in value]
    return value


def shorten_arguments(arguments: str, limit: int) -> str:
    """Shorten long string leaves of a JSON argument string; the result stays valid JSON. Arguments that
    were never JSON (a Codex custom tool's freeform input, an apply_patch body) are shortened as the text
    they are: quoting them would turn the tool's input into a JSON string it never took."""
    if len(arguments) <= limit:
        return arguments
    try:
        parsed = json.loads(arguments)
    except (TypeError, ValueError):
        return arguments[:ARG_KEEP_CHARS] + "...[truncated]"
    return json.dumps(_shorten_leaves(parsed, limit), ensure_ascii=False)


def is_output(message: dict) -> bool:
    """A tool's output, or a command the user ran with its output (transcript.command_run): what prune clears."""
    return is_tool_result(message) or command_run(message) is not None


def output_text(message: dict) -> str:
    run = command_run(message)
    return run[1] if run else message_text(message)


def _with_output(message: dict, text: str) -> dict:
    return with_command_output(message, text) if command_run(message) else {**message, "content": text}


def prune_message(message: dict, s: CompressionConfig, stats: Counter) -> dict:
    """A middle message as prune leaves it: a long tool output cleared, long call arguments shortened (the
    same object when nothing changes)."""
    if is_output(message) and len(output_text(message)) > s.prune_min_chars:
        stats["tool_outputs_pruned"] += 1
        return _with_output(message, PRUNED_TOOL_OUTPUT)
    calls = tool_calls(message)
    if any(len(str(c.get("function", {}).get("arguments", ""))) > s.max_tool_arg_chars for c in calls):
        shortened = []
        for call in calls:
            function = dict(call.get("function") or {})
            if isinstance(function.get("arguments"), str):
                function["arguments"] = shorten_arguments(function["arguments"], s.max_tool_arg_chars)
            shortened.append({**call, "function": function})
        stats["tool_arguments_shortened"] += 1
        return {**message, "tool_calls": shortened}
    return message


def shortened_tool_output(message: dict, keep_chars: int) -> dict:
    """A tool row (or a command run's output) cut to about `keep_chars` characters: its start and end, and a
    marker between."""
    text = output_text(message)
    if len(text) <= keep_chars:
        return message
    start = int(keep_chars * SHORTENED_HEAD_SHARE)
    end = keep_chars - start
    mark = SHORTENED_MARK.format(cut=len(text) - keep_chars)
    return _with_output(message, f"{text[:start]}\n{mark}\n{text[len(text) - end:] if end else ''}")


def cleared_tool_output(message: dict) -> dict:
    """A head or tail output cleared (demoted, or by the fit step): its error lines stay under the marker. The
    summary covers the middle only, so a cleared tail build's errors would be in neither."""
    errors = error_lines(output_text(message))[-CLEARED_ERRORS_KEPT:]   # the last, as the score probes them
    kept = "".join(f"\n{clip_verbatim(line, CLEARED_ERROR_CHARS)}" for line in errors)
    return _with_output(message, PRUNED_TOOL_OUTPUT + (f"\n{KEPT_ERRORS_LABEL}{kept}" if kept else ""))


def fit_pruned(message: dict, settings: CompressionConfig) -> dict:
    """A head or tail message the fit step prunes: as prune_message, a cleared output keeping its error lines."""
    pruned = prune_message(message, settings, Counter())
    return cleared_tool_output(message) if pruned is not message and is_output(message) else pruned


def demoted_in_tail(plan: Plan) -> list[int]:
    """The tail tool outputs an oversized tail loses: all but the last few messages'. Not when
    nothing is summarized (head and tail cover everything): the fit step alone decides what such a tail loses.
    Nor when head, summary and tail together stay under the compaction threshold: the agent would not compact
    that output again, and a demoted output (the latest build's errors) is what it would have to run again."""
    tail = sum(plan.counts[plan.tail_start:])
    if not plan.middle or tail <= OVERSIZED_TAIL_FACTOR * plan.budgets.tail_token_budget or \
            sum(plan.counts[:plan.head_end]) + plan.summary_tokens + tail <= plan.budgets.threshold_tokens:
        return []
    last_demotable = len(plan.original) - TAIL_KEPT_VERBATIM
    return [i for i in range(plan.tail_start, last_demotable)
            if is_output(plan.original[i]) and len(output_text(plan.original[i])) > plan.settings.prune_min_chars]


class PruneStage(Stage):
    name = "prune"
    phase = 1
    needs = frozenset({SOURCE})      # indices of the plan: before assembly
    keeps_messages_verbatim = False

    def apply(self, draft: Draft, plan: Plan) -> Draft:
        stats: Counter = Counter()
        messages = list(draft.messages)
        for i in range(plan.head_end, plan.tail_start):
            messages[i] = prune_message(messages[i], plan.settings, stats)
        self._drop_old_images(messages, plan, stats)
        for i in demoted_in_tail(plan):
            messages[i] = cleared_tool_output(messages[i])
            stats["tail_tool_outputs_demoted"] += 1
        self._fit(messages, plan, stats)
        return draft.but(messages=tuple(messages), counts=stats)

    @staticmethod
    def _fit(messages: list[dict], plan: Plan, stats: Counter) -> None:
        """What the fit step chose, so that the output fits the context."""
        for i in sorted(plan.pruned):
            pruned = fit_pruned(messages[i], plan.settings)   # counted apart, below
            if pruned is not messages[i]:
                stats["fit_tool_outputs_cleared" if is_output(pruned) else "fit_tool_arguments_shortened"] += 1
                messages[i] = pruned
        for i, keep_chars in plan.shorten:
            messages[i] = shortened_tool_output(messages[i], keep_chars)
            stats["fit_tool_outputs_shortened"] += 1

    @staticmethod
    def _drop_old_images(messages: list[dict], plan: Plan, stats: Counter) -> None:
        """Keep the newest images; older ones outside head and tail become text."""
        seen = 0
        for i in range(len(messages) - 1, -1, -1):
            content = messages[i].get("content")
            if not isinstance(content, list) or not any(is_image_part(p) for p in content):
                continue
            new_content = []
            for part in reversed(content):
                if is_image_part(part):
                    seen += 1
                    if seen > plan.settings.keep_images and plan.head_end <= i < plan.tail_start:
                        part = {"type": "text", "text": IMAGE_PLACEHOLDER}
                        stats["images_removed"] += 1
                new_content.append(part)
            new_content.reverse()
            if new_content != content:
                messages[i] = {**messages[i], "content": new_content}
