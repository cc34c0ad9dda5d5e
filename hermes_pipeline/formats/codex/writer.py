"""A compacted Codex rollout, written the way Codex compacts itself.

Writing: every line of the rollout as it was, then, when the engine changed
the conversation, one `compacted` line whose `replacement_history` is head +
summary + tail as Codex items (an unchanged message is its items as read; a
changed or new one is built from its OpenAI form), which `codex resume` loads.
Messages keep only a small mark (`_codex`: message number, fingerprint); the
writer reads the rollout again for the items behind it.
"""
from __future__ import annotations

import json
from typing import Any

from hermes_pipeline.formats.codex.items import CALLS, SYSTEM, call_of, mark_of
from hermes_pipeline.formats.roundtrip import fingerprint
from hermes_pipeline.transcript import is_summary_message, message_text, tool_calls, unmarked


def _parts(content: Any, role: str) -> list[dict]:
    text_type = "output_text" if role == "assistant" else "input_text"
    if isinstance(content, str):
        return [{"type": text_type, "text": content}] if content or role != "assistant" else []
    parts = []
    for part in content or ():
        if not isinstance(part, dict) or part.get("type") == "reasoning":
            continue
        if part.get("type") == "text":
            part = {"type": text_type, "text": part.get("text", "")}
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            part = {"type": "input_image", "image_url": url.get("url") if isinstance(url, dict) else url}
        parts.append(part)
    return parts


def _call_item(call: dict, original: dict | None) -> dict:
    if original is not None and call_of(original) == call:
        return original
    function = call.get("function") or {}
    name, arguments = function.get("name"), function.get("arguments")
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
    if original is not None and original["type"] == "custom_tool_call":
        return {**original, "name": name, "input": arguments}
    base = original if original is not None and original["type"] == "function_call" else {}
    return {**base, "type": "function_call", "name": name, "arguments": arguments, "call_id": call.get("id") or ""}


class ReplacementHistory:
    """The replacement history for a conversation's messages (sources as the reader's HistoryReader made them)."""

    def __init__(self, read):
        self.read = read
        self.calls = {call_of(i)["id"]: i for items in read.sources for i in items if i.get("type") in CALLS}

    def items(self, messages: list[dict]) -> list[dict]:
        """Each message's items, with the carried items of the messages as read kept in order: those of a
        message the engine removed go before what replaced it (the summary)."""
        out: list[dict] = []
        carried, done = self.read.carried, 0
        for index, message in enumerate(messages):
            mark = mark_of(message)
            upto = mark["g"] + 1 if mark is not None else self._next_mark(messages, index)
            while done < min(upto, len(carried)):
                out.extend(carried[done])
                done += 1
            out.extend(self._message_items(unmarked(message), mark))
        for items in carried[done:]:
            out.extend(items)
        return out + self.read.trailing

    def _next_mark(self, messages: list[dict], index: int) -> int:
        return next((m["g"] for m in map(mark_of, messages[index + 1:]) if m is not None), len(self.read.carried))

    def _message_items(self, message: dict, mark: dict | None) -> list[dict]:
        sources = self.read.sources[mark["g"]] if mark is not None and mark["g"] < len(self.read.sources) else []
        if mark is not None and mark["g"] == SYSTEM and message.get("role") == "system":
            return list(sources)      # the base instructions live in session_meta, not in the history
        if mark is not None and mark.get("fp") == fingerprint(message):
            return list(sources)
        role = message.get("role")
        if role == "tool":
            return [self._output(message, sources[0] if sources else None)]
        if role == "assistant":
            return self._assistant(message, sources)
        original = next((i for i in sources if i.get("type") == "message"), {})
        item_role = original.get("role") or ("developer" if role in ("developer", "system") else "user")
        content = _parts(message.get("content"), item_role)
        return [{**original, "type": "message", "role": item_role, "content": content}]

    def _output(self, message: dict, original: dict | None) -> dict:
        """A changed tool row (its output cleared, or a stub for a call whose output was dropped)."""
        call_id = message.get("tool_call_id") or ""
        if original is not None and original.get("type") not in ("function_call_output", "custom_tool_call_output"):
            return original       # an output without a text form (tool_search_output) stays as it was
        custom = (self.calls.get(call_id) or {}).get("type") == "custom_tool_call"
        kind = original["type"] if original is not None else \
            "custom_tool_call_output" if custom else "function_call_output"
        output = message.get("content")
        if not isinstance(output, (str, list)):
            output = json.dumps(output, ensure_ascii=False)
        return {**(original or {}), "type": kind, "call_id": call_id, "output": output}

    def _assistant(self, message: dict, sources: list[dict]) -> list[dict]:
        """A changed assistant message: its reasoning items kept, its text and calls as they are now."""
        calls = {call.get("id"): call for call in tool_calls(message)}
        text = [p for p in _parts(message.get("content"), "assistant") if p.get("type") == "output_text"
                and p.get("text")]
        out, text_done = [], not text
        for item in sources:
            kind = item.get("type")
            if kind == "message" or (kind in CALLS and not text_done):
                if not text_done:
                    out.append({**(item if kind == "message" else {"type": "message", "role": "assistant"}),
                                "content": text})
                    text_done = True
            if kind in CALLS and call_of(item)["id"] in calls:
                out.append(_call_item(calls.pop(call_of(item)["id"]), item))
            elif kind not in CALLS and kind != "message":
                out.append(item)      # reasoning and other model output, as it was
        if not text_done:
            out.append({"type": "message", "role": "assistant", "content": text})
        return out + [_call_item(call, self.calls.get(call_id)) for call_id, call in calls.items()]


def summary_text(messages: list[dict]) -> str:
    return next((message_text(m) for m in messages if mark_of(m) is None and is_summary_message(m)), "")


def compacted_line(lines: list[dict], replacement: list[dict], summary: str) -> dict:
    """Codex's own compaction record, after the rollout's last line (same timestamp: output is reproducible)."""
    last = lines[-1]
    line: dict = {"timestamp": last.get("timestamp")}
    ordinals = [v["ordinal"] for v in lines if isinstance(v.get("ordinal"), int)]
    if ordinals:      # a paginated rollout: Codex refuses a last line without one
        line["ordinal"] = max(ordinals) + 1
    line.update(type="compacted", payload={"message": summary, "replacement_history": replacement})
    return line
