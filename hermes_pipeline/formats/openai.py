"""OpenAI chat format: the canonical one, so reading and writing copy messages as they are."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.base import (
    CONVERSATION, MESSAGE, TranscriptFormat, bad_content_reason, checked, file_conversation_id, read_each,
    record_id,
)
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.jsonl import Record, Rejected
from hermes_pipeline.transcript import Conversation
from hermes_pipeline.usage import last_context_tokens


def recorded_prompt_tokens(record: dict, messages: list[dict]) -> int | None:
    """API-reported size of the conversation, from the last usage block found."""
    usages = [m.get("usage") for m in messages if isinstance(m, dict)]
    return last_context_tokens(usages + [record.get("usage")])


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
        yield from read_each(items, self._conversation_problem, lambda item: Conversation(
            id=record_id(item.value, path, item.line_no), messages=item.value["messages"], source=item.source,
            format=self.name, layout=CONVERSATION, record=item.value,
            recorded_prompt_tokens=recorded_prompt_tokens(item.value, item.value["messages"]),
            notes=list(item.repairs),
        ))

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
        # the same checks as for a message inside a conversation, reported per record
        problem_of = lambda value: (bad_content_reason(value, 0) or "").replace("message 0", "record", 1) or None
        for item in checked(items, problem_of):
            if isinstance(item, Rejected):
                yield item
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
                raw_records=list(messages),
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
