"""Phase 1: cheap pruning, no model call.

Outside the verbatim head and tail: long tool outputs become a placeholder,
long tool-call arguments are shortened while staying valid JSON (REFERENCE §9),
and only the newest images are kept (§10). A tail that alone is far over its
budget gets its older tool outputs demoted too, keeping the last 3 messages
verbatim (§6). The summarizer still reads the unpruned originals.
"""
from __future__ import annotations

import json

from hermes_pipeline.stages.base import CompactionState, EngineContext, Stage
from hermes_pipeline.stages.boundary import ensure_boundaries
from hermes_pipeline.transcript import is_tool_result, message_text, tool_calls

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


def _is_image(part) -> bool:
    return isinstance(part, dict) and part.get("type") in ("image_url", "image", "input_image")


class PruneStage(Stage):
    name = "prune"

    def run(self, state: CompactionState, context: EngineContext) -> None:
        ensure_boundaries(state)
        messages = list(state.original)
        for i in range(state.head_end, state.tail_start):
            messages[i] = self._prune_middle_message(messages[i], state)
        self._drop_old_images(messages, state)
        self._demote_oversized_tail(messages, state)
        state.messages = messages

    def _prune_middle_message(self, message: dict, state: CompactionState) -> dict:
        s = state.settings
        if is_tool_result(message) and len(message_text(message)) > s.prune_min_chars:
            state.count("tool_outputs_pruned")
            return {**message, "content": PRUNED_TOOL_OUTPUT}
        calls = tool_calls(message)
        if any(len(str(c.get("function", {}).get("arguments", ""))) > s.max_tool_arg_chars for c in calls):
            shortened = []
            for call in calls:
                function = dict(call.get("function") or {})
                if isinstance(function.get("arguments"), str):
                    function["arguments"] = shorten_arguments(function["arguments"], s.max_tool_arg_chars)
                shortened.append({**call, "function": function})
            state.count("tool_arguments_shortened")
            return {**message, "tool_calls": shortened}
        return message

    def _drop_old_images(self, messages: list[dict], state: CompactionState) -> None:
        """Keep the newest images; older ones outside head and tail become text."""
        seen = 0
        for i in range(len(messages) - 1, -1, -1):
            content = messages[i].get("content")
            if not isinstance(content, list) or not any(_is_image(p) for p in content):
                continue
            new_content = []
            for part in reversed(content):
                if _is_image(part):
                    seen += 1
                    if seen > state.settings.keep_images and state.head_end <= i < state.tail_start:
                        part = {"type": "text", "text": IMAGE_PLACEHOLDER}
                        state.count("images_removed")
                new_content.append(part)
            new_content.reverse()
            if new_content != content:
                messages[i] = {**messages[i], "content": new_content}

    def _demote_oversized_tail(self, messages: list[dict], state: CompactionState) -> None:
        budget = state.budgets.tail_token_budget
        if sum(state.counts[state.tail_start:]) <= OVERSIZED_TAIL_FACTOR * budget:
            return
        last_demotable = len(messages) - TAIL_KEPT_VERBATIM
        for i in range(state.tail_start, last_demotable):
            if is_tool_result(messages[i]) and len(message_text(messages[i])) > state.settings.prune_min_chars:
                messages[i] = {**messages[i], "content": PRUNED_TOOL_OUTPUT}
                state.count("tail_tool_outputs_demoted")
