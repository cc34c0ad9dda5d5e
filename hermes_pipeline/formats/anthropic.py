"""Anthropic Messages API transcripts.

Layouts: `{"system": ..., "messages": [...], ...}` one conversation per line,
or one message per line (`{"role": ..., "content": ...}`, API responses
included). To OpenAI: `tool_use` blocks become the assistant's `tool_calls`
(arguments = the input as a JSON string), each `tool_result` block becomes a
`role: tool` row, the other blocks of a user message become a user message
after those rows. Every other block (text, image, thinking, unknown) stays in
the OpenAI content list as it is. Exact round trips come from `roundtrip`.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.base import (
    CONVERSATION,
    MESSAGE,
    TranscriptFormat,
    bytes_as_read,
    checked,
    file_conversation_id,
    read_each,
    record_id,
)
from hermes_pipeline.formats.roundtrip import (
    Group,
    carried_record,
    clone,
    fingerprint,
    kept_if_unchanged,
    original_of,
    private,
    regroup,
    source_fields,
    tag,
)
from hermes_pipeline.inputs.jsonl import Record, Rejected
from hermes_pipeline.transcript import Conversation, tool_calls
from hermes_pipeline.usage import last_context_tokens

KEY = "_anthropic"
ROLES = ("user", "assistant", "system")
ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
                    "web_search_tool_result", "document", "search_result", "mcp_tool_use", "mcp_tool_result"}
OPENAI_PARTS = {"image_url", "input_audio", "file", "refusal", "input_text", "output_text"}
DETECT_MESSAGES = 50


# -- detection and validation -------------------------------------------------

def _evidence(message: Any) -> tuple[bool, bool]:
    """(looks Anthropic, looks OpenAI) for one message."""
    if not isinstance(message, dict):
        return False, False
    openai = any(k in message for k in ("tool_calls", "tool_call_id", "function_call")) \
        or message.get("role") in ("tool", "function", "developer")
    anthropic = False
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            continue
        anthropic |= kind in ANTHROPIC_BLOCKS or (kind == "image" and "source" in block)
        openai |= kind in OPENAI_PARTS
    return anthropic, openai


def block_problem(block: Any, where: str) -> str | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return f"{where} is not a content block object with a string 'type'"
    kind = block["type"]
    if kind == "tool_use" and not (isinstance(block.get("id"), str) and isinstance(block.get("name"), str)
                                   and isinstance(block.get("input"), dict)):
        return f"{where} is a tool_use without a string id, a string name and an object input"
    if kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str):
            return f"{where} is a tool_result without a string tool_use_id"
        inner = block.get("content", "")
        if not isinstance(inner, (str, list)):
            return f"{where} tool_result content is a {type(inner).__name__} (expected string or list)"
        for j, part in enumerate(inner if isinstance(inner, list) else ()):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                return f"{where} tool_result part {j} is not a content block object"
    return None


def message_problem(message: Any, where: str) -> str | None:
    """Why a value can't be used as an Anthropic message, or None."""
    if not isinstance(message, dict):
        return f"{where} is a {type(message).__name__}, not an object"
    if message.get("role") not in ROLES:
        return f"{where} role {message.get('role')!r} is not one of user, assistant, system"
    if "tool_calls" in message or "tool_call_id" in message:
        return f"{where} is an OpenAI-style message (tool_calls / tool_call_id) inside an Anthropic transcript"
    if "content" not in message:
        return f"{where} has no content"
    content = message["content"]
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"{where} content is a {type(content).__name__} (expected string or list of content blocks)"
    for j, block in enumerate(content):
        problem = block_problem(block, f"{where} block {j}")
        if problem:
            return problem
    return None


def conversation_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"record is a {type(value).__name__}, not a conversation object"
    if not isinstance(value.get("messages"), list):
        return "record has no 'messages' list"
    system = value.get("system")
    if system is not None and not isinstance(system, (str, list)):
        return f"system is a {type(system).__name__} (expected string or list of text blocks)"
    for j, block in enumerate(system if isinstance(system, list) else ()):
        problem = block_problem(block, f"system block {j}")
        if problem:
            return problem
    for index, message in enumerate(value["messages"]):
        problem = message_problem(message, f"message {index}")
        if problem:
            return problem
    return None


def _recorded_tokens(record: dict, messages: list) -> int | None:
    return last_context_tokens([m.get("usage") for m in messages] + [record.get("usage")])


# -- Anthropic -> OpenAI --------------------------------------------------------

def _call(block: dict) -> dict:
    arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
    return {"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": arguments}}


def message_to_openai(message: dict, group: int) -> list[dict]:
    """The OpenAI pieces of one Anthropic message, tagged for an exact round trip."""
    role, content = message["role"], message["content"]
    if role == "system" or isinstance(content, str):
        pieces, kept = [{"role": role, "content": clone(content)}], [content]
    elif role == "assistant":
        uses = [b for b in content if b.get("type") == "tool_use"]
        parts = [clone(b) for b in content if b.get("type") != "tool_use"]
        piece = {"role": "assistant", "content": parts if parts or not uses else None}
        if uses:
            piece["tool_calls"] = [_call(b) for b in uses]
        pieces, kept = [piece], [content]
    else:
        results = [b for b in content if b.get("type") == "tool_result"]
        rest = [b for b in content if b.get("type") != "tool_result"]
        pieces = [{"role": "tool", "tool_call_id": b["tool_use_id"], "content": clone(b.get("content") or "")}
                  for b in results]
        kept = [[b] for b in results]
        if rest or not results:
            pieces.append({"role": "user", "content": clone(rest)})
            kept.append(rest)
    return tag(pieces, KEY, group, message, kept)


def to_openai(system: Any, messages: list[dict]) -> list[dict]:
    out = []
    if isinstance(system, (str, list)):
        top = {"role": "system", "content": clone(system)}
        top[KEY] = {"g": -1, "fp": fingerprint(top), "kept": system}
        out.append(top)
    for index, message in enumerate(messages):
        out.extend(message_to_openai(message, index))
    return out


# -- OpenAI -> Anthropic --------------------------------------------------------

def _image(part: dict) -> dict:
    image = part.get("image_url")
    url = image.get("url", "") if isinstance(image, dict) else str(image or "")
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _block(part: Any) -> dict:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, dict):
        return {"type": "text", "text": json.dumps(part)}
    kind = part.get("type")
    if kind == "image_url":
        return _image(part)
    if kind in ("input_text", "output_text", "refusal"):
        block = {"type": "text", "text": str(part.get("text", part.get("refusal", "")))}
        if "cache_control" in part:
            block["cache_control"] = part["cache_control"]
        return block
    return part


def blocks(content: Any) -> list[dict]:
    """Anthropic content blocks for OpenAI content (string, parts or None); no empty text blocks."""
    if content is None:
        return []
    found = [_block(p) for p in (content if isinstance(content, list) else [content])]
    return [b for b in found if not (b.get("type") == "text" and b.get("text") == "" and "cache_control" not in b)]


def _arguments_input(arguments: Any) -> dict:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        value = arguments
    if isinstance(value, dict):
        return value
    return {} if value is None else {"arguments": value}


def _tool_uses(message: dict, kept: Any) -> list[dict]:
    old = [b for b in kept if isinstance(b, dict) and b.get("type") == "tool_use"] if isinstance(kept, list) else []
    out = []
    for i, call in enumerate(tool_calls(message)):
        function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
        block = {"type": "tool_use", "id": call.get("id") if isinstance(call, dict) else None,
                 "name": function.get("name"), "input": _arguments_input(function.get("arguments"))}
        if i < len(old) and all(old[i].get(k) == block[k] for k in ("id", "name", "input")):
            block = old[i]
        out.append(block)
    return out


def _tool_result(message: dict, kept: Any) -> dict:
    old = kept[0] if isinstance(kept, list) and len(kept) == 1 and isinstance(kept[0], dict) else {}
    old = old if old.get("tool_use_id") == message.get("tool_call_id") else {}
    block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id")}
    block.update({k: v for k, v in old.items() if k not in ("type", "tool_use_id", "content", "cache_control")})
    content = message.get("content")
    block["content"] = content if isinstance(content, str) else blocks(content)
    if isinstance(message.get("cache_control"), dict):
        block["cache_control"] = message["cache_control"]
    return block


def piece_content(message: dict) -> str | list:
    """Anthropic content for one OpenAI message: what was read when unchanged, else converted."""
    same, kept = kept_if_unchanged(message, KEY)
    if same:
        return kept
    mark = private(message, KEY)
    kept = mark.get("kept") if mark else None
    if message.get("role") == "tool":
        return [_tool_result(message, kept)]
    content = message.get("content")
    if isinstance(content, str) and not tool_calls(message) and "cache_control" not in message:
        return content
    out = blocks(content)
    if message.get("role") == "assistant":
        out += _tool_uses(message, kept)
    if isinstance(message.get("cache_control"), dict) and out:
        out[-1] = {**out[-1], "cache_control": message["cache_control"]}
    return out


def group_to_message(group: Group) -> dict:
    original = original_of(group, KEY)
    if original is not None:
        return original
    parts = [piece_content(m) for m in group.pieces]
    if len(parts) == 1 and isinstance(parts[0], str):
        content = parts[0]
    else:
        content = [b for part in parts for b in (blocks(part) if isinstance(part, str) else part)]
    return {"role": group.role, "content": content, **source_fields(group, KEY, ("role", "content"))}


def _role_of(layout: str):
    def role_of(message: dict) -> str:
        role = message.get("role")
        if role == "system":
            mark = private(message, KEY)
            in_messages = mark is not None and isinstance(mark.get("g"), int) and mark["g"] >= 0
            return "system" if in_messages or layout == MESSAGE else "user"
        return role if role in ("user", "assistant") else "user"
    return role_of


def _is_top_system(message: dict) -> bool:
    mark = private(message, KEY)
    return message.get("role") == "system" and (mark is None or mark.get("g") == -1)


def _system(messages: list[dict]) -> Any:
    """The top-level system prompt for the leading system messages."""
    if len(messages) == 1:
        same, kept = kept_if_unchanged(messages[0], KEY)
        if same:
            return kept
        content = messages[0].get("content")
        if isinstance(content, str) and "cache_control" not in messages[0]:
            return content
    return _system_blocks(messages)


def _system_blocks(messages: list[dict]) -> list[dict]:
    out = []
    for message in messages:
        same, kept = kept_if_unchanged(message, KEY)
        content = kept if same else message.get("content")
        part = blocks(content)
        if not same and isinstance(message.get("cache_control"), dict) and part:
            part[-1] = {**part[-1], "cache_control": message["cache_control"]}
        out.extend(part)
    return out


def to_anthropic(messages: list[dict], layout: str) -> tuple[Any, list[dict]]:
    """(top-level system or None, Anthropic messages) for OpenAI messages."""
    head = 0
    if layout == CONVERSATION:
        while head < len(messages) and _is_top_system(messages[head]):
            head += 1
    system = _system(messages[:head]) if head else None
    return system, [group_to_message(g) for g in regroup(messages[head:], KEY, _role_of(layout))]


# -- the format ------------------------------------------------------------------

class AnthropicFormat(TranscriptFormat):
    name = "anthropic"

    def detect(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return None
        messages = value.get("messages")
        if isinstance(messages, list):
            sample = messages[:DETECT_MESSAGES]
            if not all(isinstance(m, dict) and m.get("role") in ROLES for m in sample):
                return None
            evidence = [_evidence(m) for m in sample]
            if any(o for _, o in evidence):
                return None
            return CONVERSATION if "system" in value or any(a for a, _ in evidence) else None
        if value.get("role") in ROLES and isinstance(value.get("content"), (str, list)):
            anthropic, openai = _evidence(value)
            if not openai and (anthropic or value.get("type") == "message"):
                return MESSAGE
        return None

    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        if layout == MESSAGE:
            yield from self._read_messages(items, path)
            return
        yield from read_each(items, conversation_problem, lambda item: Conversation(
            id=record_id(item.value, path, item.line_no),
            messages=to_openai(item.value.get("system"), item.value["messages"]), source=item.source,
            format=self.name, layout=CONVERSATION, record=item.value,
            recorded_prompt_tokens=_recorded_tokens(item.value, item.value["messages"]), notes=list(item.repairs),
        ))

    def _read_messages(self, items, path) -> Iterator[Conversation | Rejected]:
        originals, messages, notes, first_source, lines, records = [], [], [], None, [], []
        for item in checked(items, lambda value: message_problem(value, "record")):
            if isinstance(item, Rejected):
                yield item
                continue
            first_source = first_source or item.source
            pieces = message_to_openai(item.value, len(originals))
            messages.extend(pieces)
            lines.extend([item.line_no] * len(pieces))
            originals.append(item.value)
            records.append(item)
            notes.extend(item.repairs)
        if originals:
            yield Conversation(
                id=file_conversation_id(path), messages=messages, source=first_source, format=self.name,
                layout=MESSAGE, record=None, recorded_prompt_tokens=_recorded_tokens({}, originals), notes=notes,
                stats={"records": len(originals)},     # input lines this conversation was read from
                raw_records=originals, message_lines=lines, records_as_read=bytes_as_read(records),
            )

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        system, messages = to_anthropic(conversation.messages, layout)
        if layout == MESSAGE:      # system messages are lines of their own here
            yield from messages
            return
        record = carried_record(conversation, self.name, ("conversations",))
        if system is not None:
            record["system"] = system
        elif isinstance(record.get("system"), (str, list)):
            del record["system"]     # the system prompt was removed
        record["messages"] = messages
        yield record
