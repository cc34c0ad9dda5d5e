"""OpenAI chat format: the canonical one, so reading and writing copy messages as they are."""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.base import (
    CONVERSATION,
    MESSAGE,
    TranscriptFormat,
    bad_content_reason,
    bytes_as_read,
    file_conversation_id,
    gather,
    read_each,
    record_id,
)
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.inputs.jsonl import Record, Rejected
from hermes_pipeline.transcript import Conversation
from hermes_pipeline.usage import last_context_tokens

# content part types the Chat Completions API takes; another format's blocks are converted or dropped
OPENAI_PART_TYPES = {"text", "image_url", "input_audio", "file", "refusal"}
_DROPPED = {"thinking", "redacted_thinking", "reasoning"}     # a model's reasoning has no input form in chat messages


def _openai_part(part: Any) -> dict | None:
    """An OpenAI content part for one part read from another format; None for reasoning."""
    if not isinstance(part, dict):
        return {"type": "text", "text": part if isinstance(part, str) else json.dumps(part)}
    kind = part.get("type")
    if kind in OPENAI_PART_TYPES:
        return part
    if kind in _DROPPED:
        return None
    source = part.get("source") if isinstance(part.get("source"), dict) else {}
    if kind == "image" and source.get("type") == "base64":
        return {"type": "image_url", "image_url": {"url": f"data:{source.get('media_type')};base64,{source.get('data')}"}}
    if kind == "image" and source.get("type") == "url":
        return {"type": "image_url", "image_url": {"url": source.get("url")}}
    if kind == "input_image" and isinstance(part.get("image_url"), str):    # the Responses API's (Codex)
        return {"type": "image_url", "image_url": {"url": part["image_url"]}}
    if isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    return {"type": "text", "text": json.dumps(part, ensure_ascii=False)}   # a block chat has no form for


def openai_message(message: dict) -> dict:
    """A message read from another format, as the Chat Completions API takes it."""
    # a message-level cache_control is Anthropic's form; chat messages carry markers only in their parts
    message = {k: v for k, v in public(message).items() if k != "cache_control"}
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = [q for q in map(_openai_part, content) if q is not None]
    if not parts:       # only reasoning: an assistant turn keeps its calls, or an empty text
        return {**message, "content": None if message.get("tool_calls") else ""}
    return {**message, "content": parts}


MESSAGE_KEYS = ("messages", "traj", "history")   # where a record keeps its chat messages (tau-bench: `traj`)


def messages_key(value: Any) -> str | None:
    """The key of a record's list of chat messages, if it has one."""
    for key in MESSAGE_KEYS if isinstance(value, dict) else ():
        messages = value.get(key)
        if isinstance(messages, list) and all(isinstance(m, dict) and "role" in m for m in messages[:5]):
            return key
    return None


def recorded_prompt_tokens(record: dict, messages: list[dict]) -> int | None:
    """API-reported size of the conversation, from the last usage block found."""
    usages = [m.get("usage") for m in messages if isinstance(m, dict)]
    return last_context_tokens(usages + [record.get("usage")])


class OpenAIFormat(TranscriptFormat):
    name = "openai"

    def detect(self, value: Any) -> str | None:
        if isinstance(value, dict):
            if messages_key(value):
                return CONVERSATION
            if isinstance(value.get("role"), str) and value.get("type") is None:
                return MESSAGE
        return None

    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        if layout == MESSAGE:
            yield from self._read_message_layout(items, path)
            return
        yield from read_each(items, self._conversation_problem, lambda item: Conversation(
            id=record_id(item.value, path, item.line_no), messages=item.value[messages_key(item.value)],
            source=item.source, format=self.name, layout=CONVERSATION, record=item.value,
            recorded_prompt_tokens=recorded_prompt_tokens(item.value, item.value[messages_key(item.value)]),
            notes=list(item.repairs),
        ))

    def _conversation_problem(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"record is a {type(value).__name__}, not a conversation object"
        messages = value.get(messages_key(value) or "messages")
        if not isinstance(messages, list):
            return "record has no 'messages' list"
        for index, message in enumerate(messages):
            reason = bad_content_reason(message, index)
            if reason:
                return reason
        return None

    def _read_message_layout(self, items, path) -> Iterator[Conversation | Rejected]:
        records: list[Record] = []
        # the same checks as for a message inside a conversation, reported per record
        problem_of = lambda value: (bad_content_reason(value, 0) or "").replace("message 0", "record", 1) or None
        yield from gather(items, problem_of, records)
        messages = [r.value for r in records]
        notes = [repair for r in records for repair in r.repairs]
        first_source = records[0].source if records else None
        if messages:
            yield Conversation(
                id=file_conversation_id(path), messages=messages, source=first_source,
                format=self.name, layout=MESSAGE, record=None,
                recorded_prompt_tokens=recorded_prompt_tokens({}, messages), notes=notes,
                stats={"records": len(messages)},      # input lines this conversation was read from
                raw_records=list(messages), message_lines=[r.line_no for r in records],
                records_as_read=bytes_as_read(records),
            )

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        messages = conversation.messages
        if conversation.format != self.name:
            # read from another format: drop its private round-trip keys ("_anthropic", ...) and its own blocks
            messages = [openai_message(m) for m in messages]
        if layout == MESSAGE:
            yield from messages
            return
        record = dict(conversation.record or {"id": conversation.id}) if conversation.format == self.name \
            else {"id": conversation.id}
        record[messages_key(record) or "messages"] = messages     # under the key it was read from
        yield record
