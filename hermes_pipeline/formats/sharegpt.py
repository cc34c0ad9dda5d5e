"""ShareGPT trajectories (Hermes style): `{"conversations": [{"from": ..., "value": ...}], ...}`.

`gpt` turns carry tool calls as `<tool_call>{"name": ..., "arguments": ...}</tool_call>`
(they become OpenAI `tool_calls` with ids `call_<line>_<n>`); `tool` turns carry
one `<tool_response>...</tool_response>` per call, in call order (each becomes
a `role: tool` row). Exact round trips come from `roundtrip`.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.base import CONVERSATION, TranscriptFormat, read_each, record_id
from hermes_pipeline.formats.roundtrip import (
    Group,
    carried_record,
    original_of,
    regroup,
    source_fields,
    tag,
)
from hermes_pipeline.inputs.jsonl import Record, Rejected
from hermes_pipeline.transcript import Conversation, text_of, tool_calls

KEY = "_sharegpt"
ROLE_OF = {"system": "system", "human": "user", "user": "user", "gpt": "assistant",
           "assistant": "assistant", "tool": "tool", "observation": "tool"}
FROM_OF = {"system": "system", "user": "human", "assistant": "gpt", "tool": "tool"}
TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
TOOL_RESPONSE = re.compile(r"<tool_response>(.*?)</tool_response>", re.S)


def _turn_problem(turn: Any, index: int) -> str | None:
    if not isinstance(turn, dict):
        return f"turn {index} is a {type(turn).__name__}, not an object"
    if not isinstance(turn.get("from"), str) or turn["from"] not in ROLE_OF:
        return f"turn {index} has 'from' {turn.get('from')!r}, not one of {', '.join(ROLE_OF)}"
    if not isinstance(turn.get("value"), str):
        return f"turn {index} value is a {type(turn.get('value')).__name__} (expected a string)"
    return None


def conversation_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"record is a {type(value).__name__}, not a conversation object"
    if not isinstance(value.get("conversations"), list):
        return "record has no 'conversations' list"
    for index, turn in enumerate(value["conversations"]):
        problem = _turn_problem(turn, index)
        if problem:
            return problem
    return None


def _parse_calls(value: str, line: int, first: int) -> tuple[str | None, list[dict]]:
    """(text outside the tool-call blocks, OpenAI tool calls) of a gpt turn."""
    calls, text, position = [], [], 0
    for match in TOOL_CALL.finditer(value):
        try:
            call = json.loads(match.group(1))
        except ValueError:
            continue                      # not a call we can read: it stays in the text
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            continue
        arguments = call.get("arguments", {})
        calls.append({"id": f"call_{line}_{first + len(calls) + 1}", "type": "function", "function": {
            "name": call["name"],
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)}})
        text.append(value[position:match.start()])
        position = match.end()
    if not calls:
        return value, []
    text.append(value[position:])
    return "".join(text).strip() or None, calls


def _responses(value: str) -> list[str]:
    found = [m.group(1).strip() for m in TOOL_RESPONSE.finditer(value)]
    return found or [value]


def to_openai(turns: list[dict], line: int) -> tuple[list[dict], list[str]]:
    messages, notes, waiting, calls_made, unmatched = [], [], [], 0, 0
    for index, turn in enumerate(turns):
        role, value = ROLE_OF[turn["from"]], turn["value"]
        if role == "assistant":
            content, calls = _parse_calls(value, line, calls_made)
            calls_made += len(calls)
            piece = {"role": "assistant", "content": content}
            if calls:
                piece["tool_calls"] = calls
            pieces, waiting = [piece], [c["id"] for c in calls]
        elif role == "tool":
            pieces = []
            for body in _responses(value):
                if not waiting:
                    unmatched += 1
                    notes.append(f"turn {index}: tool response without a matching tool call")
                call_id = waiting.pop(0) if waiting else f"call_{line}_unmatched_{unmatched}"
                pieces.append({"role": "tool", "tool_call_id": call_id, "content": body})
        else:
            pieces = [{"role": role, "content": value}]
        messages.extend(tag(pieces, KEY, index, turn, [None] * len(pieces)))
    return messages, notes


def _call_text(call: dict) -> str:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = function.get("arguments", {})
    try:
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        pass
    body = json.dumps({"name": function.get("name"), "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def group_to_turn(group: Group) -> dict:
    original = original_of(group, KEY)
    if original is not None:
        return original
    first = group.pieces[0]
    if group.role == "tool":
        value = "\n".join(f"<tool_response>\n{text_of(m.get('content'))}\n</tool_response>" for m in group.pieces)
    elif group.role == "assistant":
        text = text_of(first.get("content"))
        value = "\n".join(([text] if text else []) + [_call_text(c) for c in tool_calls(first) if isinstance(c, dict)])
    else:
        value = text_of(first.get("content"))
    turn = {"from": FROM_OF[group.role], "value": value}
    turn.update(source_fields(group, KEY, ("value",)))
    turn["value"] = value
    return turn


def _role_of(message: dict) -> str:
    role = message.get("role")
    return role if role in FROM_OF else "user"


class ShareGPTFormat(TranscriptFormat):
    name = "sharegpt"

    def detect(self, value: Any) -> str | None:
        turns = value.get("conversations") if isinstance(value, dict) else None
        if isinstance(turns, list) and all(isinstance(t, dict) and "from" in t and "value" in t for t in turns[:5]):
            return CONVERSATION
        return None

    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        yield from read_each(items, conversation_problem, lambda item: self._conversation(item, path))

    def _conversation(self, item: Record, path: str) -> Conversation:
        record = item.value
        messages, notes = to_openai(record["conversations"], item.line_no)
        return Conversation(
            id=record_id(record, path, item.line_no), messages=messages, source=item.source, format=self.name,
            layout=CONVERSATION, record=record, recorded_prompt_tokens=None, notes=list(item.repairs) + notes,
        )

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        record = carried_record(conversation, self.name, ("messages", "system"))
        record["conversations"] = [group_to_turn(g) for g in regroup(conversation.messages, KEY, _role_of)]
        yield record
