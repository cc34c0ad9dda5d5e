"""Phase 1: cheap pruning, no model call.

Outside the verbatim head and tail: long tool outputs become a placeholder,
long tool-call arguments are shortened while staying valid JSON (REFERENCE §9),
and only the newest images are kept (§10). A tail that alone is far over its
budget gets its older tool outputs demoted too, keeping the last 3 messages
verbatim (§6): the one place the tail is not verbatim, so that a tail which alone
fills the context can still be compacted. The summarizer reads the unpruned originals.
"""
from __future__ import annotations

import json
from collections import Counter

from hermes_pipeline.engine.base import StageTools
from hermes_pipeline.engine.plan import Plan, Settings
from hermes_pipeline.stages.base import Draft, Stage
from hermes_pipeline.transcript import is_image_part, is_tool_result, message_text, tool_calls

PRUNED_TOOL_OUTPUT = "[Old tool output cleared to save context space]"
IMAGE_PLACEHOLDER = "[Image removed to save context space]"
OVERSIZED_TAIL_FACTOR = 1.5
TAIL_KEPT_VERBATIM = 3
ARG_KEEP_CHARS = 1200


def _shorten_leaves(value, limit: int):
    if isinstance(value, str) and len(value) > limit:
        return value[:ARG_KEEP_CHARS] + f"...[{len(value) - ARG_KEEP_CHARS} chars truncated]"
    if isinstance(value, dict):
        return {k: _shorten_leaves(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten_leaves(v, limit) for v in value]
    return value


def shorten_arguments(arguments: str, limit: int) -> str:
    """Shorten long string leaves of a JSON argument string; the result stays valid JSON."""
    if len(arguments) <= limit:
        return arguments
    try:
        parsed = json.loads(arguments)
    except (TypeError, ValueError):
        return json.dumps(arguments[:ARG_KEEP_CHARS] + "...[truncated]")
    return json.dumps(_shorten_leaves(parsed, limit), ensure_ascii=False)


class PruneStage(Stage):
    name = "prune"
    phase = 1

    def apply(self, draft: Draft, plan: Plan, tools: StageTools, stats: Counter) -> Draft:
        messages = list(draft.messages)
        for i in range(plan.head_end, plan.tail_start):
            messages[i] = self._prune_middle_message(messages[i], plan.settings, stats)
        self._drop_old_images(messages, plan, stats)
        self._demote_oversized_tail(messages, plan, stats)
        return draft.but(messages=tuple(messages))

    @staticmethod
    def _prune_middle_message(message: dict, s: Settings, stats: Counter) -> dict:
        if is_tool_result(message) and len(message_text(message)) > s.prune_min_chars:
            stats["tool_outputs_pruned"] += 1
            return {**message, "content": PRUNED_TOOL_OUTPUT}
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

    @staticmethod
    def _demote_oversized_tail(messages: list[dict], plan: Plan, stats: Counter) -> None:
        if sum(plan.counts[plan.tail_start:]) <= OVERSIZED_TAIL_FACTOR * plan.budgets.tail_token_budget:
            return
        last_demotable = len(messages) - TAIL_KEPT_VERBATIM
        for i in range(plan.tail_start, last_demotable):
            if is_tool_result(messages[i]) and len(message_text(messages[i])) > plan.settings.prune_min_chars:
                messages[i] = {**messages[i], "content": PRUNED_TOOL_OUTPUT}
                stats["tail_tool_outputs_demoted"] += 1
