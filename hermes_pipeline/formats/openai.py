"""OpenAI chat format: the canonical one, so reading and writing copy messages as they are."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.base import (
    CONVERSATION, MESSAGE, TranscriptFormat, bad_content_reason, file_conversation_id,
)
from hermes_pipeline.formats.lossless import public
from hermes_pipeline.io import Record, Rejected, reject
from hermes_pipeline.transcript import Conversation


def recorded_prompt_tokens(record: dict, messages: list[dict]) -> int | None:
    """API-reported size of the conversation, from the last usage block found."""
    usages = [m.get("usage") for m in messages if isinstance(m, dict) and isinstance(m.get("usage"), dict)]
    if isinstance(record.get("usage"), dict):
        usages.append(record["usage"])
    for usage in reversed(usages):
        prompt = usage.get("prompt_tokens")
        if isinstance(prompt, int):
            completion = usage.get("completion_tokens")
            return prompt + (completion if isinstance(completion, int) else 0)
    return None


class OpenAIFormat(TranscriptFormat):
    name = "openai"

    def detect(self, value: Any) -> str | None:
        if isinstance(value, dict):
            messages = value.get("messages")
            if isinstance(messages, list) and all(isinstance(m, dict) and "role" in m for m in messages[:5]):
                return CONVERSATION
            if isinstance(value.get("role"), str) and value.get("type") is None:
                return MESSAGE
        return None

    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        if layout == MESSAGE:
            yield from self._read_message_layout(items, path)
            return
        for item in items:
            if isinstance(item, Rejected):
                yield item
                continue
            reason = self._conversation_problem(item.value)
            if reason:
                yield reject(item, reason)
                continue
            record = item.value
            yield Conversation(
                id=str(record.get("id") or f"{file_conversation_id(path)}-{item.line_no}"),
                messages=record["messages"], source=item.source, format=self.name,
                layout=CONVERSATION, record=record,
                recorded_prompt_tokens=recorded_prompt_tokens(record, record["messages"]),
                notes=list(item.repairs),
            )

    def _conversation_problem(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"record is a {type(value).__name__}, not a conversation object"
        messages = value.get("messages")
        if not isinstance(messages, list):
            return "record has no 'messages' list"
        for index, message in enumerate(messages):
            reason = bad_content_reason(message, index)
            if reason:
                return reason
        return None

    def _read_message_layout(self, items, path) -> Iterator[Conversation | Rejected]:
        messages, notes, first_source = [], [], None
        for item in items:
            if isinstance(item, Rejected):
                yield item
                continue
            reason = bad_content_reason(item.value, len(messages))
            if reason:
                yield reject(item, reason.replace(f"message {len(messages)}", "record"))
                continue
            first_source = first_source or item.source
            messages.append(item.value)
            notes.extend(item.repairs)
        if messages:
            yield Conversation(
                id=file_conversation_id(path), messages=messages, source=first_source,
                format=self.name, layout=MESSAGE, record=None,
                recorded_prompt_tokens=recorded_prompt_tokens({}, messages), notes=notes,
                stats={"records": len(messages)},      # input lines this conversation was read from
            )

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        messages = conversation.messages
        if conversation.format != self.name:
            # read from another format: drop its private round-trip keys ("_anthropic", ...)
            messages = [public(m) for m in messages]
        if layout == MESSAGE:
            yield from messages
            return
        record = dict(conversation.record or {"id": conversation.id}) if conversation.format == self.name \
            else {"id": conversation.id}
        record["messages"] = messages
        yield record
