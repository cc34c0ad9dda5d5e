"""The reader/writer seam: one `TranscriptFormat` per on-disk transcript shape.

A format turns a file's parsed records into `Conversation`s (OpenAI chat
messages inside) and a `Conversation` back into records. Parse errors never
reach a format: `inputs.jsonl.read_records` turns them into `Rejected` items first, and
a format passes them on untouched.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from hermes_pipeline.inputs.jsonl import Record, Rejected, reject
from hermes_pipeline.transcript import Conversation

CONVERSATION = "conversation"   # one conversation per line
MESSAGE = "message"             # one message (or event) per line; the file is one conversation


KEEP, DROP = "keep", "drop"     # output.native.history


@dataclass(frozen=True)
class WriteOptions:
    """How a native writer writes (`output.native.*`); a plain value: it crosses processes."""
    history: str = KEEP          # keep: the input lines untouched, the compaction appended; drop: only what resumes
    store: str = "copy"          # a Hermes state.db: compact a copy of it (copy), or the store itself (in_place)


@dataclass
class Written:
    """A native writer's output: the lines, and what the manifest row says about them."""
    values: list
    row: dict = field(default_factory=dict)
    done_as: str | None = None      # an input written in place: the state key it will be read back under


class TranscriptFormat(ABC):
    name: str = ""
    write_as: str | None = None   # a read-only format names the format its conversations are written in
    native: bool = False          # an agent's own session format, written back compacted as the agent would

    @property
    def writable(self) -> bool:
        return self.write_as is None

    @abstractmethod
    def detect(self, value: Any) -> str | None:
        """The layout if a file's first record looks like this format, else None."""

    @abstractmethod
    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        """Conversations (and rejected records, passed through) from one file."""

    @abstractmethod
    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        """The JSON values to write, one per output line."""

    def write_compacted(self, conversation: Conversation, compaction: Any, layout: str, options: Any) -> Any:
        """What to write for a conversation and its compaction (engine/base.py Compaction): a
        Written. A native format writes the session as its agent compacts itself
        (it gets the lines as read and the compaction's parts); the others write the messages."""
        return Written(list(self.write(replace(conversation, messages=compaction.messages), layout)))


def file_conversation_id(path: str) -> str:
    """A one-conversation-per-file transcript is named after its file."""
    return Path(path).stem


def bad_content_reason(message: Any, index: int) -> str | None:
    """Why a message can't be used as an OpenAI chat message, or None."""
    if not isinstance(message, dict):
        return f"message {index} is a {type(message).__name__}, not an object"
    if not isinstance(message.get("role"), str):
        return f"message {index} has no string 'role'"
    content = message.get("content")
    if content is None and message["role"] != "assistant":
        state = "is null" if "content" in message else "is missing"
        return f"message {index} ({message['role']}) content {state} (only an assistant message may have none)"
    if content is not None and not isinstance(content, (str, list)):
        return f"message {index} content is a {type(content).__name__} (expected string, list or null)"
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return f"message {index} tool_calls is not a list"
    for j, call in enumerate(calls or ()):
        if not isinstance(call, dict) or not isinstance(call.get("function", {}), dict):
            return f"message {index} tool call {j} is not an object with a 'function' object"
    return None


def checked(items: Iterable[Record | Rejected], problem_of) -> Iterator[Record | Rejected]:
    """Records in order: rejections passed through, a record with a problem rejected in its place."""
    for item in items:
        if isinstance(item, Rejected):
            yield item
            continue
        problem = problem_of(item.value)
        yield reject(item, problem) if problem else item


def gather(items: Iterable[Record | Rejected], problem_of, records: list[Record]) -> Iterator[Rejected]:
    """A one-conversation file's usable records appended to `records`; the rejected ones yielded."""
    for item in checked(items, problem_of):
        if isinstance(item, Rejected):
            yield item
        else:
            records.append(item)


def read_each(items: Iterable[Record | Rejected], problem_of, build) -> Iterator[Conversation | Rejected]:
    """One conversation per record (the conversation-per-line layout)."""
    for item in checked(items, problem_of):
        if isinstance(item, Rejected):
            yield item
            continue
        conversation = build(item)
        conversation.digest = item.digest      # what an incremental run compares, line by line
        conversation.raw_line = item.raw        # a line, or a JSON document's element (over many lines, perhaps)
        yield conversation


def bytes_as_read(records: list[Record]) -> list[bytes] | None:
    """The bytes of each record a one-conversation file was read from (None if one was not read from a file)."""
    raw = [record.raw for record in records]
    return None if None in raw else raw


def record_id(record: dict, path: str, line_no: int) -> str:
    """The record's own id, else one made of the file name and line."""
    return str(record.get("id") or f"{file_conversation_id(path)}-{line_no}")
