"""What `hermes-pipeline-lcm` shows a person: where a hit is, originals as they were read, a compacted
conversation with the originals of each summary under it.

A removed message is named by its conversation, the input file and line it was
read from (the line its turn starts on in a one-conversation-per-file log; the
conversation's own line otherwise) and its position in the conversation (the
numbers of the summary's "messages i-j"). Internal fields (the `_anthropic` /
`_sharegpt` round-trip marks) are never shown: a message is shown as the
input's own format had it, for Claude Code and pi logs the Anthropic message
their lines make up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

from hermes_pipeline.engine.lcm.store import POINTER, Hit, LCMStore, snippet
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.reports.render import body, label

ROUND_TRIP_KEYS = ("_anthropic", "_sharegpt")


@dataclass(frozen=True)
class Found:
    conversation: str
    where: str           # file:line
    position: int        # in the conversation, as the summary's "messages i-j" count
    role: str
    pointer: str         # lcm:<span id>
    snippet: str


def source_file(source: str) -> str:
    return source.rsplit(":", 1)[0] if ":" in source else source


def message_where(span: dict, position: int, fallback_source: str | None = None) -> str:
    """file:line of one message of a span."""
    source = span.get("source") or fallback_source or "?"
    lines = span.get("lines")
    if lines and span["start"] <= position < span["end"]:
        return f"{source_file(source)}:{lines[position - span['start']]}"
    return source


class Browser:
    """Reads a store for people; objects are read once per command."""

    def __init__(self, store: LCMStore):
        self.store = store
        self.get = lru_cache(maxsize=256)(store.get)

    def record_source(self, record_pointer: str) -> str | None:
        """The input a record was read from (stores written before spans said so)."""
        oid = record_pointer.removeprefix("lcm:")
        found = [row[2] for row in self.store.conversations() if row[0] == oid]
        return found[0] if found else None

    def found(self, hits: list[Hit], pattern: re.Pattern | None = None) -> Iterator[Found]:
        """Where each hit is; its snippet from what the message says when the pattern is there (the
        store's text also has ids and field values)."""
        for hit in hits:
            span = self.get(hit.object_id)
            k = hit.index - span["start"]
            message = span["messages"][k] if 0 <= k < len(span["messages"]) else {}
            source = None if span.get("source") else self.record_source(span.get("record", ""))
            text = body(message)
            match = pattern.search(text) if pattern is not None else None
            yield Found(span["conversation"], message_where(span, hit.index, source), hit.index, label(message),
                        f"lcm:{hit.object_id}", snippet(text, match) if match else hit.snippet)

    def resolve(self, name: str) -> tuple[str, list[str]]:
        """("conversation", [record ids]) for a conversation id, else ("object", [its id]).
        Raises KeyError naming what is not there."""
        if not name.startswith("lcm:"):
            records = [row[0] for row in self.store.conversations(conversation_id=name)]
            if records:
                return "conversation", records
        try:
            return "object", [self.store.resolve(name)]
        except KeyError:
            raise KeyError(f"{name!r}: no conversation of that id and no such object in {self.store.path}") \
                from None


def as_read(messages: list[dict], start: int) -> Iterator[tuple[int, int, dict, dict]]:
    """(first position, last position, the message as the input had it, its canonical form) per source
    message: the pieces of one Anthropic or ShareGPT message are shown as that one message."""
    k = 0
    while k < len(messages):
        message = messages[k]
        mark = next((message[key] for key in ROUND_TRIP_KEYS if isinstance(message.get(key), dict)), None)
        pieces = mark.get("n", 1) if mark and "orig" in mark else 1
        whole = pieces <= len(messages) - k      # a span may end inside a source message: its pieces then
        if not whole:
            pieces = 1
        original = mark["orig"] if whole and mark and "orig" in mark else public(message)
        yield start + k, start + k + pieces - 1, original, public(message)
        k += pieces


def pointers_of(text: str) -> list[str]:
    """The span pointers a summary names, in order."""
    found = (POINTER.search(line) for line in text.splitlines() if line.startswith("Stored originals: lcm:"))
    return [match.group(1) for match in found if match]


def span_messages(span: dict) -> list[tuple[int, dict]]:
    return [(span["start"] + k, m) for k, m in enumerate(span["messages"])]
